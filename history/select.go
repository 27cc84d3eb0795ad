package history

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// CollectDir collects the sweep in dir (see testrun.Collect), writes its
// results.json and, unless storePath is empty, stores the run in the
// history store there (collecting again replaces it). alongside, unless
// nil, is given the collected run while those are written (a report
// made from it, kept until CollectDir has returned without an error); it
// must not change the run. CollectDir returns when both are done.
//
// A sweep with cells still queued or running (testrun.NotFinished) is
// not over: CollectDir writes nothing, neither results.json nor the
// store, calls no alongside, and returns the run read so far with an
// *UnfinishedError, so that no half-run sweep is ever judged, compared
// or counted in the bad-node ledger.
func CollectDir(dir string, opts testrun.CollectOptions, storePath string, alongside func(*testrun.Run)) (*testrun.Run, error) {
	run, err := testrun.Collect(dir, opts)
	if err != nil {
		return nil, err
	}
	if n, states := run.Unfinished(); n > 0 {
		return run, &UnfinishedError{Dir: dir, Sweep: run.ID, Cells: len(run.Cells), Unfinished: n, States: states}
	}
	if alongside != nil {
		var wg sync.WaitGroup
		wg.Go(func() { alongside(run) })
		defer wg.Wait()
	}
	if storePath == "" {
		return run, testrun.WriteRun(dir, run)
	}
	// results.json and the store hold the same bytes (a collected run has
	// no notes): encoded once.
	doc, err := testrun.EncodeRun(run)
	if err != nil {
		return nil, err
	}
	if err := sweep.WriteFileAtomic(filepath.Join(dir, sweep.ResultsFile), append(doc, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := PutDoc(storePath, run, doc); err != nil {
		return run, &NotStoredError{Dir: dir, Store: Redact(storePath), Err: err}
	}
	return run, nil
}

// PutDoc stores a run, encoded by EncodeRun, in the history store at loc.
func PutDoc(loc string, run *testrun.Run, doc []byte) error {
	st, err := Open(loc, false)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.PutEncoded(run, doc)
}

// UnfinishedError is a sweep collected while some of its cells had not
// ended: nothing was written, and what to do.
type UnfinishedError struct {
	Dir, Sweep        string
	Cells, Unfinished int
	States            string // "1 RUNNING, 1 PENDING"
}

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("sweep %s is not finished: %d of %d cells are still queued or running (%s); nothing was written or stored. "+
		"Wait for them with kvsweep status %s --watch, then collect again (or end them with kvsweep cancel %s, and collect what ran)",
		e.Sweep, e.Unfinished, e.Cells, e.States, e.Dir, e.Dir)
}

// NotStoredError is a sweep collected, its results.json written, that the
// history store could not take: how to try again.
type NotStoredError struct {
	Dir, Store string
	Err        error
}

func (e *NotStoredError) Error() string {
	return fmt.Sprintf("%s is written, but the history store %s was not updated: %v; once it can be reached, run kvsweep store push %s (or collect again)", filepath.Join(e.Dir, sweep.ResultsFile), e.Store, e.Err, e.Dir)
}

func (e *NotStoredError) Unwrap() error { return e.Err }

// SelectRuns resolves a selection SEL: a sweep directory (its
// results.json), a sweep id in the history store h, or a
// KEY=VALUE[,KEY=VALUE] selector over the stored runs. A sweep directory
// is read without opening h.
func SelectRuns(h History, sel string) ([]*testrun.Run, error) {
	if fi, err := os.Stat(filepath.Join(sel, sweep.ManifestFile)); err == nil && !fi.IsDir() {
		r, err := testrun.ReadRun(sel)
		if err != nil {
			return nil, err
		}
		return []*testrun.Run{r}, nil
	}
	if err := Opened(h); err != nil {
		return nil, fmt.Errorf("%q is not a sweep directory, and %w", sel, err)
	}
	if strings.Contains(sel, "=") {
		fs, err := ParseFilters(strings.Split(sel, ","))
		if err != nil {
			return nil, fail.Usagef("%v", err)
		}
		runs, err := h.Query(Query{Filters: fs})
		if err != nil {
			return nil, err
		}
		if len(runs) > 0 {
			return runs, nil
		}
		return nil, fail.Usagef("no stored run has cells matching %s", sel)
	}
	r, err := h.Get(sel)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fail.Usagef("%q is neither a sweep directory nor a run in %s (kvsweep report --history lists them)", sel, h)
	}
	return []*testrun.Run{r}, nil
}

// Latest returns the newest run in the store h with that name and ref,
// other than the run except; nil when there is none (no store yet is
// none).
func Latest(h History, name, ref, except string) (*testrun.Run, error) {
	if Missing(h) {
		return nil, nil
	}
	runs, err := h.Query(Query{Named: true, Name: name, Ref: ref, Except: except, Newest: true})
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	return runs[0], nil
}

// StoredRuns reads every run of the store at path (a bbolt file or a
// URL), which is opened read-only; with missingOK a store file that does
// not exist yet has none (a database without kvsweep's tables has none in
// any case).
func StoredRuns(path string, missingOK bool) ([]*testrun.Run, error) {
	if _, err := os.Stat(path); !IsURL(path) && missingOK && errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	st, err := Open(path, true)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Runs()
}
