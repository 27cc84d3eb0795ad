package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/testrun"
)

// The removals (kvsweep store forget) live in a bucket of their own, in
// the order they were made: a run that is gone leaves its record there.
var removalsBucket = []byte("removals")

// Forget removes the run of the sweep id and its index entries, and
// records rm, in one transaction; the sweep's notes stay.
func (s *Store) Forget(id string, rm history.Removal) (history.Removal, bool, error) {
	ok := false
	err := s.update(func(tx *bbolt.Tx) error {
		runs := tx.Bucket(runsBucket)
		v := runs.Get([]byte(id))
		if v == nil {
			return nil
		}
		run, err := testrun.DecodeRun(bytes.Clone(v))
		if err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		rm = rm.Of(run)
		if err := rm.Check(); err != nil {
			return err
		}
		b, err := json.Marshal(rm)
		if err != nil {
			return err
		}
		if err := runs.Delete([]byte(id)); err != nil {
			return err
		}
		if err := reindex(tx, id, nil); err != nil {
			return err
		}
		bk, err := tx.CreateBucketIfNotExists(removalsBucket)
		if err != nil {
			return err
		}
		seq, err := bk.NextSequence()
		if err != nil {
			return err
		}
		ok = true
		return bk.Put(binary.BigEndian.AppendUint64(nil, seq), b)
	})
	return rm, ok, err
}

// Removals returns the removals recorded, oldest first.
func (s *Store) Removals() ([]history.Removal, error) {
	var out []history.Removal
	err := s.view(func(tx *bbolt.Tx) error {
		bk := tx.Bucket(removalsBucket)
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error {
			var r history.Removal
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("removal %x: %w", k, err)
			}
			out = append(out, r)
			return nil
		})
	})
	return out, err
}
