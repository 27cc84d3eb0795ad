package pgstore

import (
	"os"
	"testing"

	"github.com/kvsweep/kvsweep/internal/pgtest"
	"github.com/kvsweep/kvsweep/internal/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The history store's suite, as on the bbolt file, on PostgreSQL.
func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) string { return pgtest.DB(t) })
}
