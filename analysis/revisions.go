package analysis

import (
	"fmt"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/testrun"
)

// RevisionParam is the cell parameter of a revision set (kvsweep run
// --revisions).
const RevisionParam = "revision"

// RevisionRow is one revision set of a run: how each case went in its
// cells, and the image they ran.
type RevisionRow struct {
	Revision string
	// Cases is each case's state: PASS, FAIL (every cell of the set
	// failed it), FAIL 1/2 (some did), or the outcome of cells without a
	// result (MISSING, INVALID ...).
	Cases   map[string]string
	Digest  string
	Commits string
	Passed  bool // every case of every cell passed
}

// Revisions is the run's revisions x cases table, in the order the
// revision sets were given, and the index of the first set that did not
// pass (-1 when all did). A run without revision sets has no rows.
func Revisions(r *testrun.Run) (rows []RevisionRow, firstFailing int) {
	index := map[string]int{}
	type tally struct{ pass, total int }
	counts := []map[string]*tally{}
	for _, c := range r.Cells {
		rev, ok := c.Params[RevisionParam]
		if !ok {
			continue
		}
		i, seen := index[rev]
		if !seen {
			i = len(rows)
			index[rev] = i
			rows = append(rows, RevisionRow{Revision: rev, Cases: map[string]string{}, Digest: testrun.ShortDigest(c.Image.Digest), Commits: c.Revisions(), Passed: true})
			counts = append(counts, map[string]*tally{})
		}
		row := &rows[i]
		if c.Outcome != testrun.OK {
			row.Passed = false
			for _, id := range c.Planned {
				row.Cases[id] = c.Outcome
			}
			continue
		}
		for _, cs := range c.Cases {
			t := counts[i][cs.ID]
			if t == nil {
				t = &tally{}
				counts[i][cs.ID] = t
			}
			t.total++
			if cs.Verdict == result.Pass {
				t.pass++
			} else {
				row.Passed = false
			}
		}
	}
	firstFailing = -1
	for i := range rows {
		for id, t := range counts[i] {
			if _, taken := rows[i].Cases[id]; taken {
				continue
			}
			switch {
			case t.pass == t.total:
				rows[i].Cases[id] = result.Pass
			case t.pass == 0:
				rows[i].Cases[id] = "FAIL"
			default:
				rows[i].Cases[id] = fmt.Sprintf("FAIL %d/%d", t.total-t.pass, t.total)
			}
		}
		if !rows[i].Passed && firstFailing < 0 {
			firstFailing = i
		}
	}
	return rows, firstFailing
}
