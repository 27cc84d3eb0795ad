package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/storetest"
)

// The history store's suite on the embedded bbolt file (package history/pg
// runs the same suite on PostgreSQL).
func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "history.db") })
}
