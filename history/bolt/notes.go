package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/kvsweep/kvsweep/testrun"
)

// The test plan's notes live in a bucket of their own beside the runs,
// so collecting a sweep again keeps them.

var notesBucket = []byte("notes")

// AddNote stores n after the notes already kept for its sweep.
func (s *Store) AddNote(n testrun.Note) error {
	if err := n.Check(); err != nil {
		return err
	}
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return s.update(func(tx *bbolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(notesBucket)
		if err != nil {
			return err
		}
		seq, err := bk.NextSequence()
		if err != nil {
			return err
		}
		return bk.Put([]byte(fmt.Sprintf("%s\x00%016x", n.Sweep, seq)), b)
	})
}

// notesOf reads the notes of one sweep, in the order they were written.
func notesOf(tx *bbolt.Tx, sweepID string) ([]testrun.Note, error) {
	bk := tx.Bucket(notesBucket)
	if bk == nil {
		return nil, nil
	}
	var out []testrun.Note
	prefix := []byte(sweepID + "\x00")
	c := bk.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var n testrun.Note
		if err := json.Unmarshal(v, &n); err != nil {
			return nil, fmt.Errorf("note %q: %w", k, err)
		}
		out = append(out, n)
	}
	return out, nil
}
