package history

import (
	"encoding/json"
	"fmt"

	"github.com/kvsweep/kvsweep/testrun"
)

// Copied is what Copy did: the runs read, those written (new or
// different), those already there the same, and the notes added.
type Copied struct {
	Runs, Written, Same, Notes int
}

// Copy copies every run and note of the history store at src into
// the one at dst (either a bbolt file or a URL; dst is created if need
// be), and then verifies the copy: each run of src read back from dst
// has the same content hash, and each of its notes is there. It is
// idempotent: a run dst holds the same is not written again, a note it
// holds is not added twice. Runs of dst that src lacks are kept.
func Copy(src, dst string) (Copied, error) {
	var c Copied
	from, err := Open(src, true)
	if err != nil {
		return c, err
	}
	runs, err := from.Runs()
	from.Close()
	if err != nil {
		return c, err
	}
	c.Runs = len(runs)
	to, err := Open(dst, false)
	if err != nil {
		return c, err
	}
	defer to.Close()
	for _, r := range runs {
		if err := copyRun(to, r, &c); err != nil {
			return c, fmt.Errorf("copying run %s to %s: %w", r.ID, to, err)
		}
	}
	for _, r := range runs {
		if err := verifyRun(to, r); err != nil {
			return c, fmt.Errorf("history store %s: after the copy, %w", to, err)
		}
	}
	return c, nil
}

func copyRun(to History, r *testrun.Run, c *Copied) error {
	have, err := to.Get(r.ID)
	if err != nil {
		return err
	}
	if have == nil || runHash(have) != runHash(r) {
		if err := to.Put(r); err != nil {
			return err
		}
		c.Written++
	} else {
		c.Same++
	}
	for _, n := range r.Notes {
		if have != nil && hasNote(have.Notes, n) {
			continue
		}
		if err := to.AddNote(n); err != nil {
			return err
		}
		c.Notes++
	}
	return nil
}

// verifyRun checks that to holds r: the same run, and each of its notes.
func verifyRun(to History, r *testrun.Run) error {
	got, err := to.Get(r.ID)
	if err != nil {
		return err
	}
	if got == nil {
		return fmt.Errorf("run %s is missing", r.ID)
	}
	if runHash(got) != runHash(r) {
		return fmt.Errorf("run %s differs from the source's", r.ID)
	}
	for _, n := range r.Notes {
		if !hasNote(got.Notes, n) {
			return fmt.Errorf("run %s lacks the note %q", r.ID, n.String())
		}
	}
	return nil
}

// runHash is the content hash of a run without its notes ("" if it does
// not encode, which no stored run does).
func runHash(r *testrun.Run) string {
	cp := *r
	cp.Notes = nil
	h, _ := ContentHash(&cp)
	return h
}

func hasNote(notes []testrun.Note, n testrun.Note) bool {
	want, _ := json.Marshal(n)
	for _, have := range notes {
		if b, _ := json.Marshal(have); string(b) == string(want) {
			return true
		}
	}
	return false
}
