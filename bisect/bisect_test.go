package bisect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
)

// fake judges commit i of a line of n: bad from firstBad on; skip and
// fail name commits it skips or errors on (once).
type fake struct {
	mu       sync.Mutex
	index    map[string]int
	firstBad int
	skip     map[int]string
	fail     map[int]bool
	asked    map[string]int
}

func line(n int) []Commit {
	var cs []Commit
	for i := range n {
		cs = append(cs, Commit{SHA: fmt.Sprintf("%012x%028x", i+1, i), Subject: fmt.Sprintf("commit %d", i), Author: "A <a@example.com>"})
	}
	return cs
}

func newFake(cs []Commit, firstBad int) *fake {
	f := &fake{index: map[string]int{}, firstBad: firstBad, skip: map[int]string{}, fail: map[int]bool{}, asked: map[string]int{}}
	for i, c := range cs {
		f.index[c.SHA] = i
	}
	return f
}

func (f *fake) Probe(_ context.Context, c Commit, _ Role) (Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.index[c.SHA]
	f.asked[c.SHA]++
	if f.fail[i] {
		delete(f.fail, i)
		return Outcome{}, errors.New("killed")
	}
	if r, ok := f.skip[i]; ok {
		return Outcome{Verdict: Skipped, Reason: r}, nil
	}
	if i >= f.firstBad {
		return Outcome{Verdict: Bad, Reason: "TC-06 FAIL"}, nil
	}
	return Outcome{Verdict: Good}, nil
}

func TestBisectFindsTheCommit(t *testing.T) {
	cs := line(41) // good, 39 between, bad: 40 commits after good
	for _, k := range []int{1, 2, 3, 5} {
		for first := 1; first <= 40; first++ {
			f := newFake(cs, first)
			a, err := Run(t.Context(), t.TempDir(), New("b", nil, k, cs), f, io.Discard)
			if err != nil {
				t.Fatalf("k %d first %d: %v", k, first, err)
			}
			if a.FirstBad == nil || a.FirstBad.SHA != cs[first].SHA {
				t.Fatalf("k %d first %d: %v", k, first, a)
			}
			limit := 1 + int(math.Ceil(math.Log(40)/math.Log(float64(k+1))))
			if a.Rounds > limit {
				t.Errorf("k %d first %d: %d rounds, want at most %d", k, first, a.Rounds, limit)
			}
			for sha, n := range f.asked {
				if n != 1 {
					t.Errorf("k %d: %s probed %d times", k, sha[:12], n)
				}
			}
		}
	}
}

func TestBisectSkips(t *testing.T) {
	cs := line(41)
	f := newFake(cs, 23)
	f.skip[20] = "does not build"
	f.skip[24] = "failed outside the test twice"
	a, err := Run(t.Context(), t.TempDir(), New("b", nil, 1, cs), f, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if a.FirstBad == nil || a.FirstBad.SHA != cs[23].SHA {
		t.Errorf("with skips: %v", a)
	}
	// The commit right before the first bad one skipped: the answer is a
	// range of two.
	f = newFake(cs, 23)
	f.skip[22] = "does not build"
	a, err = Run(t.Context(), t.TempDir(), New("b", nil, 1, cs), f, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if a.FirstBad != nil || len(a.Range) != 2 || a.Range[0].SHA != cs[22].SHA || a.Range[1].SHA != cs[23].SHA || len(a.Skipped) != 1 {
		t.Errorf("a range: %+v", a)
	}
	if !strings.Contains(a.String(), "skipped: "+cs[22].Short()+": does not build") {
		t.Errorf("the answer does not say what was skipped:\n%s", a)
	}
}

func TestBisectPremise(t *testing.T) {
	cs := line(10)
	for _, tc := range []struct {
		first int
		skip  map[int]string
		want  string
	}{
		{0, nil, "the good commit " + cs[0].Short() + " is in fact bad (TC-06 FAIL): the search would start from a wrong premise"},
		{10, nil, "the bad commit " + cs[9].Short() + " is in fact good"},
		{5, map[int]string{0: "does not build"}, "the good commit " + cs[0].Short() + " could not be judged (does not build)"},
	} {
		f := newFake(cs, tc.first)
		if tc.skip != nil {
			f.skip = tc.skip
		}
		_, err := Run(t.Context(), t.TempDir(), New("b", nil, 1, cs), f, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
		if len(f.asked) != 2 {
			t.Errorf("%d commits probed before the premise failed, want 2", len(f.asked))
		}
	}
}

// A bisect stopped by an error mid-round goes on from its directory:
// the outcomes it had are kept, no commit is probed twice, and the answer
// is the same.
func TestBisectResumes(t *testing.T) {
	cs := line(41)
	dir := t.TempDir()
	f := newFake(cs, 31)
	f.fail[20] = true // the first round after the premise
	_, err := Run(t.Context(), dir, New("b", nil, 3, cs), f, io.Discard)
	if err == nil {
		t.Fatal("the failing probe did not stop the bisect")
	}
	st, err := Load(dir)
	if err != nil || st == nil {
		t.Fatalf("Load: %v", err)
	}
	f.asked[cs[20].SHA] = 0 // the failed attempt gave no outcome
	a, err := Run(t.Context(), dir, st, f, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if a.FirstBad == nil || a.FirstBad.SHA != cs[31].SHA {
		t.Errorf("after a resume: %v", a)
	}
	for sha, n := range f.asked {
		if n > 1 {
			t.Errorf("%s probed %d times", sha[:12], n)
		}
	}
}

// A good commit newer than a bad one is said, not bisected through.
func TestBisectNotMonotonic(t *testing.T) {
	st := New("b", nil, 1, line(5))
	st.Probes[st.Commits[1].SHA] = &Outcome{Verdict: Bad}
	st.Probes[st.Commits[3].SHA] = &Outcome{Verdict: Good}
	if _, err := st.next(1); err == nil || !strings.Contains(err.Error(), "is good but the older commit") {
		t.Errorf("%v", err)
	}
}

// The e2e fixture's layout (first bad c23, c20 and c30 skipped): K=1
// within ceil(log2 40) + 2 rounds, K=3 in fewer.
func TestBisectFixtureLayout(t *testing.T) {
	cs := line(41)
	rounds := map[int]int{}
	for _, k := range []int{1, 3} {
		f := newFake(cs, 23)
		f.skip[20], f.skip[30] = "infra", "does not build"
		a, err := Run(t.Context(), t.TempDir(), New("b", nil, k, cs), f, io.Discard)
		if err != nil || a.FirstBad == nil || a.FirstBad.SHA != cs[23].SHA {
			t.Fatalf("k %d: %v %v", k, a, err)
		}
		rounds[k] = a.Rounds
	}
	if rounds[1] > 8 || rounds[3] >= rounds[1] {
		t.Errorf("rounds: %v", rounds)
	}
	t.Logf("rounds: %v", rounds)
}
