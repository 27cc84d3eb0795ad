package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/testrun"
)

// The index answers history queries without decoding every run: for each
// run, entries (key: a kind, the value indexed, the sweep id; value: the
// sweep id) by spec name and ref with the collection time, by run date,
// by collection time of the runs with a failure outside the test, by cell
// parameter, image ref, image digest and component commit. A query takes
// the runs every entry it can use names, decodes only those, and applies
// itself to them (history.Apply), so an entry only has to name a superset
// of the runs that match. indexKeys holds, per run, the entries it has,
// so that a run replaced leaves none behind.
//
// A store written before the index existed gets it the first time it is
// opened for writing (every run is read once, in that transaction); read
// only, such a store is queried by reading every run, as before.
var (
	indexBucket     = []byte("index")
	indexKeysBucket = []byte("index-keys")
	indexVersionKey = []byte("version")
)

// indexVersion is the index's layout; another one is built again.
const indexVersion = "1"

// Kinds of index entry: the first byte of the key.
const (
	kindNameRef = 'n' // name, ref, collected at
	kindDate    = 'd' // run date
	kindInfra   = 'i' // collected at, of a run with an infra failure
	kindParam   = 'p' // parameter key, value
	kindRef     = 'r' // image ref
	kindDigest  = 'g' // image digest without sha256:, then 0
	kindCommit  = 's' // component, commit, then 0
)

// lp appends s with its length before it, so that a key's parts never
// run into each other.
func lp(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// ts appends t so that keys sort in time order: seconds offset to be
// unsigned, then nanoseconds.
func ts(b []byte, t time.Time) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(t.Unix())^(1<<63))
	return binary.BigEndian.AppendUint32(b, uint32(t.Nanosecond()))
}

// indexEntries are the index keys of a run (without the sweep id each
// ends with).
func indexEntries(r *testrun.Run) [][]byte {
	out := [][]byte{
		ts(lp(lp([]byte{kindNameRef}, r.Name), r.Ref), r.CollectedAt),
		ts([]byte{kindDate}, r.Date()),
	}
	seen := map[string]bool{}
	add := func(k []byte) {
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	infra := false
	for _, c := range r.Cells {
		infra = infra || history.InfraFailure(c)
		for k, v := range c.Params {
			add(lp(lp([]byte{kindParam}, k), v))
		}
		add(lp([]byte{kindRef}, c.Image.Ref))
		if c.Image.Digest != "" {
			add(append(append([]byte{kindDigest}, strings.TrimPrefix(c.Image.Digest, "sha256:")...), 0))
		}
		if sr := c.Image.SourceRevisions; sr != nil {
			for name, comp := range sr.Components {
				if comp.Commit != "" {
					add(append(append(lp([]byte{kindCommit}, name), comp.Commit...), 0))
				}
			}
		}
	}
	if infra {
		out = append(out, ts([]byte{kindInfra}, r.CollectedAt))
	}
	return out
}

// reindex replaces the index entries of the run id with those of r (none
// when r is nil).
func reindex(tx *bbolt.Tx, id string, r *testrun.Run) error {
	idx, keys := tx.Bucket(indexBucket), tx.Bucket(indexKeysBucket)
	if idx == nil || keys == nil {
		return nil // a store without an index: built when opened for writing
	}
	for old := bytes.Clone(keys.Get([]byte(id))); len(old) > 0; {
		n, w := binary.Uvarint(old)
		if w <= 0 || uint64(len(old)-w) < n {
			return fmt.Errorf("index of run %s is damaged", id)
		}
		if err := idx.Delete(old[w : w+int(n)]); err != nil {
			return err
		}
		old = old[w+int(n):]
	}
	if r == nil {
		return keys.Delete([]byte(id))
	}
	var list []byte
	for _, e := range indexEntries(r) {
		k := append(e, id...)
		if err := idx.Put(k, []byte(id)); err != nil {
			return err
		}
		list = lp(list, string(k))
	}
	return keys.Put([]byte(id), list)
}

// ensureIndex builds the index of a store that has none, or one of
// another layout, from its runs.
func ensureIndex(tx *bbolt.Tx) error {
	if idx := tx.Bucket(indexBucket); idx != nil && string(idx.Get(indexVersionKey)) == indexVersion {
		return nil
	}
	for _, name := range [][]byte{indexBucket, indexKeysBucket} {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	err := tx.Bucket(runsBucket).ForEach(func(k, v []byte) error {
		r, err := testrun.DecodeRun(bytes.Clone(v))
		if err != nil {
			return fmt.Errorf("run %s: %w", k, err)
		}
		return reindex(tx, string(k), r)
	})
	if err != nil {
		return err
	}
	// The version key sorts before every entry (whose first byte is a
	// kind letter): 'v' is none of them.
	return tx.Bucket(indexBucket).Put(indexVersionKey, []byte(indexVersion))
}

// candidates are the sweep ids the index names for q, sorted; all is
// true when no part of q can use the index (every run is a candidate).
func candidates(idx *bbolt.Bucket, q history.Query) (ids []string, all bool) {
	var sets [][]string
	if q.Named {
		sets = append(sets, nameRef(idx, q))
	}
	if q.Spec != "" {
		// The name's entries of every ref: the key holds the name first.
		sets = append(sets, withPrefix(idx, lp([]byte{kindNameRef}, q.Spec)))
	}
	if !q.From.IsZero() || !q.To.IsZero() {
		sets = append(sets, timeRange(idx, kindDate, q.From, q.To))
	}
	if q.InfraFailures {
		sets = append(sets, timeRange(idx, kindInfra, q.CollectedSince, time.Time{}))
	}
	for _, f := range q.Filters {
		if prefix, ok := filterPrefix(f); ok {
			sets = append(sets, withPrefix(idx, prefix))
		}
	}
	if len(sets) == 0 {
		return nil, true
	}
	ids = sets[0]
	for _, s := range sets[1:] {
		ids = slices.DeleteFunc(ids, func(id string) bool { _, ok := slices.BinarySearch(s, id); return !ok })
	}
	return ids, false
}

// filterPrefix is the key prefix of the runs that have a cell f may
// match; false when the index cannot tell (a parameter compared with "",
// which a cell without it matches).
func filterPrefix(f history.Filter) ([]byte, bool) {
	switch {
	case f.Key == "image.digest":
		return append([]byte{kindDigest}, strings.TrimPrefix(f.Value, "sha256:")...), true
	case f.Key == "image.ref":
		return lp([]byte{kindRef}, f.Value), true
	case strings.HasPrefix(f.Key, "image.source_revisions."):
		return append(lp([]byte{kindCommit}, strings.TrimPrefix(f.Key, "image.source_revisions.")), f.Value...), true
	case f.Value == "":
		return nil, false
	}
	return lp(lp([]byte{kindParam}, f.Key), f.Value), true
}

// withPrefix is the sorted, distinct sweep ids of the entries with the
// prefix.
func withPrefix(idx *bbolt.Bucket, prefix []byte) []string {
	var ids []string
	c := idx.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		ids = append(ids, string(v))
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// timeRange is the sorted sweep ids of the entries of a time kind from
// from to to (both included; zero: open).
func timeRange(idx *bbolt.Bucket, kind byte, from, to time.Time) []string {
	var ids []string
	c := idx.Cursor()
	k, v := c.Seek([]byte{kind})
	if !from.IsZero() {
		k, v = c.Seek(ts([]byte{kind}, from))
	}
	var end []byte
	if !to.IsZero() {
		end = ts([]byte{kind}, to)
	}
	for ; k != nil && k[0] == kind; k, v = c.Next() {
		if end != nil && len(k) >= len(end) && bytes.Compare(k[:len(end)], end) > 0 {
			break
		}
		ids = append(ids, string(v))
	}
	slices.Sort(ids)
	return ids
}

// nameRef is the sweep ids of the runs of q's name and ref; when q asks
// only for the newest of them, just those collected last (all of them if
// several were collected at once).
func nameRef(idx *bbolt.Bucket, q history.Query) []string {
	prefix := lp(lp([]byte{kindNameRef}, q.Name), q.Ref)
	newestOnly := q.Newest && q.From.IsZero() && q.To.IsZero() && q.CollectedSince.IsZero() && len(q.Filters) == 0 && !q.InfraFailures
	var ids []string
	var best []byte
	c := idx.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if newestOnly && string(v) == q.Except {
			continue
		}
		when := k[len(prefix) : len(prefix)+12]
		if newestOnly && best != nil && !bytes.Equal(when, best) {
			ids = ids[:0] // keys sort by time: a later one
		}
		best = when
		ids = append(ids, string(v))
	}
	slices.Sort(ids)
	return ids
}
