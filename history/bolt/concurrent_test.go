package bolt

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// Two processes writing one store at once lose nothing and corrupt
// nothing: each puts 40 runs while the other does.
func TestConcurrentStoreWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	var procs []*exec.Cmd
	for w := 0; w < 2; w++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "KVSWEEP_STORE_WRITER="+path, fmt.Sprintf("KVSWEEP_STORE_WRITER_ID=%d", w))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		sweeptest.Must(t, cmd.Start())
		procs = append(procs, cmd)
	}
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	st, err := Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 80 {
		t.Fatalf("%d runs stored, want 80", len(runs))
	}
	for _, r := range runs {
		if len(r.Cells) != 50 {
			t.Fatalf("run %s has %d cells", r.ID, len(r.Cells))
		}
	}
}

// TestMain runs the test binary as one writer of TestConcurrentStoreWriters
// when asked to.
func TestMain(m *testing.M) {
	if path := os.Getenv("KVSWEEP_STORE_WRITER"); path != "" {
		if err := storeWriter(path, os.Getenv("KVSWEEP_STORE_WRITER_ID")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func storeWriter(path, id string) error {
	for i := 0; i < 40; i++ {
		st, err := Open(path, false)
		if err != nil {
			return err
		}
		run := &testrun.Run{ID: fmt.Sprintf("w%s-%02d", id, i), Name: "concurrent", CollectedAt: time.Now()}
		for c := 0; c < 50; c++ {
			run.Cells = append(run.Cells, testrun.CellResult{CellID: fmt.Sprintf("%012d", c), Outcome: testrun.OK, Cases: []result.Case{{ID: "TC-01", Verdict: result.Pass}}})
		}
		if err := st.Put(run); err != nil {
			return err
		}
		st.Close()
	}
	return nil
}
