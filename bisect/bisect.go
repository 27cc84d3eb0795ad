// Package bisect finds the commit of a component that broke a cell: it
// probes commits between a good and a bad one (an image built at the
// commit, the chosen cells run in it, the run judged by the gates) and
// narrows the range, K probes a round. Its state lives in a directory: a
// bisect killed at any moment and started again goes on where it was;
// each probe is asked of the Prober once and must itself resume (build
// nothing it already pushed, submit nothing twice).
package bisect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Commit is one commit of the component.
type Commit struct {
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
	Author  string `json:"author"`
}

// Short is the commit's first 12 hex digits.
func (c Commit) Short() string {
	if len(c.SHA) > 12 {
		return c.SHA[:12]
	}
	return c.SHA
}

// Line is "0123456789ab subject (author)".
func (c Commit) Line() string {
	return fmt.Sprintf("%s %s (%s)", c.Short(), c.Subject, c.Author)
}

// Verdict is what a probe found of a commit.
type Verdict string

const (
	Good    Verdict = "good"
	Bad     Verdict = "bad"
	Skipped Verdict = "skip" // could not be judged: did not build, or failed outside the test twice
)

// Word is the verdict as a sentence says it: good, bad, skipped.
func (v Verdict) Word() string {
	if v == Skipped {
		return "skipped"
	}
	return string(v)
}

// Outcome is one probe's result.
type Outcome struct {
	Verdict Verdict `json:"verdict"`
	// Reason says why: the gate that failed, the metric's change, what
	// kept it from being judged.
	Reason string `json:"reason,omitempty"`
	// Image is the image the probe ran (REF@DIGEST); Sweep its sweep
	// directory and RunID its run in the history store.
	Image string `json:"image,omitempty"`
	Sweep string `json:"sweep,omitempty"`
	RunID string `json:"run_id,omitempty"`
}

// A Prober probes a commit: builds (or finds) its image, runs the cells
// in it and judges the run. Probes of one round run at once. A Prober
// asked again for a commit after a crash must go on with what it did
// (the image it pushed, the sweep it submitted). An error stops the
// bisect (it can be started again); a commit that cannot be judged is an
// Outcome with Verdict Skipped.
type Prober interface {
	Probe(ctx context.Context, c Commit, role Role) (Outcome, error)
}

// Role is why a commit is probed: the good or bad end whose premise is
// checked first, or a commit between them.
type Role int

const (
	Between Role = iota
	GoodEnd
	BadEnd
)

// Run bisects: the premise first (the good commit good, the bad one bad,
// probed together), then rounds of up to st.K probes until the first bad
// commit is known or only skipped commits are left. Each outcome is saved
// in dir as it comes; log gets a line per round and per outcome.
func Run(ctx context.Context, dir string, st *State, p Prober, log io.Writer) (*Answer, error) {
	if len(st.Commits) < 2 {
		return nil, errors.New("bisect: no commits to search")
	}
	for {
		round, err := st.round()
		if err != nil {
			return nil, err
		}
		if round == nil {
			if err := st.premise(); err != nil {
				return nil, err
			}
			idx, err := st.next(st.K)
			if err != nil {
				return nil, err
			}
			if len(idx) == 0 {
				return st.answer()
			}
			for _, i := range idx {
				round = append(round, st.Commits[i].SHA)
			}
			st.Rounds = append(st.Rounds, round)
			if err := st.Save(dir); err != nil {
				return nil, err
			}
		}
		if err := probeRound(ctx, dir, st, p, log, round); err != nil {
			return nil, err
		}
	}
}

// round is the round in progress (its commits not all probed), the
// premise's round when none has started, or nil for a new one.
func (s *State) round() ([]string, error) {
	if len(s.Rounds) == 0 {
		r := []string{s.Commits[0].SHA, s.Commits[len(s.Commits)-1].SHA}
		s.Rounds = append(s.Rounds, r)
		return r, nil
	}
	last := s.Rounds[len(s.Rounds)-1]
	for _, sha := range last {
		if s.Probes[sha] == nil {
			return last, nil
		}
	}
	return nil, nil
}

// premise checks what the premise round found: the good end good and the
// bad end bad.
func (s *State) premise() error {
	good, bad := s.Commits[0], s.Commits[len(s.Commits)-1]
	for _, end := range []struct {
		c    Commit
		want Verdict
		name string
	}{{good, Good, "good"}, {bad, Bad, "bad"}} {
		o := s.Probes[end.c.SHA]
		switch {
		case o == nil:
			return fmt.Errorf("bisect: the %s commit %s was never probed", end.name, end.c.Short())
		case o.Verdict == Skipped:
			return fmt.Errorf("bisect: the %s commit %s could not be judged (%s): the search cannot start from it", end.name, end.c.Short(), o.Reason)
		case o.Verdict != end.want:
			return fmt.Errorf("bisect: the %s commit %s is in fact %s (%s): the search would start from a wrong premise; choose another %s commit", end.name, end.c.Short(), o.Verdict.Word(), o.Reason, end.name)
		}
	}
	return nil
}

// probeRound probes the round's commits not probed yet, at once, saving
// each outcome as it comes.
func probeRound(ctx context.Context, dir string, st *State, p Prober, log io.Writer, round []string) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	n := len(st.Rounds)
	var todo []Commit
	for _, sha := range round {
		if st.Probes[sha] == nil {
			todo = append(todo, st.commit(sha))
		}
	}
	fmt.Fprintf(log, "kvsweep bisect: round %d: probing %s\n", n, shorts(todo))
	for _, c := range todo {
		role := Between
		switch c.SHA {
		case st.Commits[0].SHA:
			role = GoodEnd
		case st.Commits[len(st.Commits)-1].SHA:
			role = BadEnd
		}
		wg.Go(func() {
			o, err := p.Probe(ctx, c, role)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("probing %s: %w", c.Short(), err))
				return
			}
			st.Probes[c.SHA] = &o
			fmt.Fprintf(log, "kvsweep bisect: %s is %s%s\n", c.Line(), o.Verdict.Word(), paren(o.Reason))
			if err := st.Save(dir); err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func shorts(cs []Commit) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += ", "
		}
		s += c.Short()
	}
	return s
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
