package bisect

import (
	"fmt"
	"strings"
)

// The search over the commits good..bad, oldest first: index 0 is the
// good commit, the last the bad one. Every probed commit is good, bad or
// skipped; lo is the newest good commit and hi the oldest bad one, and
// the first bad commit lies in (lo, hi]. Each round probes up to K of the
// unprobed commits between them, evenly spaced: with K = 1 a binary
// search, with K > 1 a k-ary one (fewer rounds, K probes a round).

// bounds returns lo and hi from the probes recorded; an error when a good
// commit is newer than a bad one (the behaviour is not monotonic: flaky
// cells, or a fix and a break in the range).
func (s *State) bounds() (lo, hi int, err error) {
	lo, hi = 0, len(s.Commits)-1
	newestGood, oldestBad := -1, len(s.Commits)
	for i, c := range s.Commits {
		o := s.Probes[c.SHA]
		if o == nil {
			continue
		}
		switch o.Verdict {
		case Good:
			newestGood = max(newestGood, i)
		case Bad:
			oldestBad = min(oldestBad, i)
		}
	}
	if newestGood > oldestBad {
		return 0, 0, fmt.Errorf("commit %s is good but the older commit %s is bad: the cells do not change once and for all in this range (a flaky cell, or a fix after the break); probe a narrower range, or with --cells choose cells that do",
			s.Commits[newestGood].Short(), s.Commits[oldestBad].Short())
	}
	if newestGood >= 0 {
		lo = newestGood
	}
	if oldestBad < len(s.Commits) {
		hi = oldestBad
	}
	return lo, hi, nil
}

// candidates are the commits between lo and hi not probed yet.
func (s *State) candidates(lo, hi int) []int {
	var out []int
	for i := lo + 1; i < hi; i++ {
		if s.Probes[s.Commits[i].SHA] == nil {
			out = append(out, i)
		}
	}
	return out
}

// next picks the commits of the next round: up to k of the candidates,
// evenly spaced so that each part of the range left is as small as can
// be. None when the search is over.
func (s *State) next(k int) ([]int, error) {
	lo, hi, err := s.bounds()
	if err != nil {
		return nil, err
	}
	c := s.candidates(lo, hi)
	if len(c) <= k {
		return c, nil
	}
	var out []int
	for j := 1; j <= k; j++ {
		i := c[(j*(len(c)+1))/(k+1)-1]
		if len(out) == 0 || out[len(out)-1] != i {
			out = append(out, i)
		}
	}
	return out, nil
}

// Answer is where a bisect ended.
type Answer struct {
	// FirstBad is the first bad commit; nil when skipped commits leave
	// several possible (Range).
	FirstBad *Commit `json:"first_bad,omitempty"`
	// Range is the commits the first bad one is among, oldest first, when
	// skipped commits leave it open (git bisect's "there are only
	// 'skip'ped commits left to test").
	Range []Commit `json:"range,omitempty"`
	// LastGood is the newest commit found good.
	LastGood Commit `json:"last_good"`
	// Skipped are the commits that could not be judged, with why.
	Skipped []Skip `json:"skipped,omitempty"`
	Rounds  int    `json:"rounds"`
	Probes  int    `json:"probes"`
}

// Skip is a commit that could not be judged.
type Skip struct {
	Commit Commit `json:"commit"`
	Reason string `json:"reason"`
}

// answer is the search's result once no candidate is left.
func (s *State) answer() (*Answer, error) {
	lo, hi, err := s.bounds()
	if err != nil {
		return nil, err
	}
	a := &Answer{LastGood: s.Commits[lo], Rounds: len(s.Rounds), Probes: len(s.Probes)}
	for _, c := range s.Commits {
		if o := s.Probes[c.SHA]; o != nil && o.Verdict == Skipped {
			a.Skipped = append(a.Skipped, Skip{c, o.Reason})
		}
	}
	if hi == lo+1 {
		a.FirstBad = &s.Commits[hi]
	} else {
		a.Range = append(a.Range, s.Commits[lo+1:hi+1]...)
	}
	return a, nil
}

// String is the answer as the command prints it.
func (a *Answer) String() string {
	var b strings.Builder
	if a.FirstBad != nil {
		fmt.Fprintf(&b, "first bad commit: %s\n", a.FirstBad.Line())
	} else {
		fmt.Fprintf(&b, "the first bad commit is one of these %d (the others could not be judged):\n", len(a.Range))
		for _, c := range a.Range {
			fmt.Fprintf(&b, "  %s\n", c.Line())
		}
	}
	fmt.Fprintf(&b, "last good commit: %s\n", a.LastGood.Line())
	for _, s := range a.Skipped {
		fmt.Fprintf(&b, "skipped: %s: %s\n", s.Commit.Short(), s.Reason)
	}
	fmt.Fprintf(&b, "%d probes in %d rounds\n", a.Probes, a.Rounds)
	return b.String()
}
