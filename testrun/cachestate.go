package testrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
)

// The figures a case's cache state is judged by: the engines' GPU-local
// prefix cache and the KV connector's (the tier under test), each a hit
// rate from 0 to 1 over the case's window.
const (
	PrefixCacheHitRate = "prefix_cache_hit_rate"
	ConnectorHitRate   = "kv_connector_hit_rate"
)

// Bounds on what collect keeps of case-windows.jsonl: the file, the steps
// of one case and the length of one step's words.
const (
	MaxCaseWindowsSize = 4 << 20
	maxCacheSteps      = 16
	maxStepText        = 240
)

// CaseCacheResult is what a case declared of the caches and what the job
// did to them before it (the case's start line in case-windows.jsonl,
// written by kvsweep job case).
type CaseCacheResult struct {
	Case string `json:"case"`
	// State is the state the spec declared (cold, warm, primed).
	State string `json:"state"`
	// Marked: the job wrote the case's start line, with what it did.
	Marked bool        `json:"marked,omitempty"`
	Steps  []CacheStep `json:"steps,omitempty"`
	// Error is what the job said went wrong before the case, if anything.
	Error string `json:"error,omitempty"`
}

// CacheStep is one thing the job did to the caches before a case: what
// (reset, tier_reset, prime, check), its target (an endpoint, a command),
// whether it took, and what the target answered.
type CacheStep struct {
	What   string `json:"what"`
	Target string `json:"target,omitempty"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// caseStart is a start line of case-windows.jsonl as kvsweep job case
// writes it; a line the harness wrote has no cache member.
type caseStart struct {
	Case  string      `json:"case"`
	Event string      `json:"event"`
	Cache *string     `json:"cache"`
	Steps []CacheStep `json:"steps"`
	Error string      `json:"error"`
}

// judgeCache records, for each case of the cell that declares a cache
// state (or that the job marked), what the job did to the caches before
// it, and turns a PASS into INVALID when the case did not run on the
// state it declared: a cold case nothing reset, a step that failed, a
// cold case's hit rate above the plan's bound, a reuse below the case's
// floor, or a figure the judgement needs that was not measured. Nothing
// happens without a cache plan.
func judgeCache(cr *CellResult, files *sweep.CellFiles, p *sweep.CachePlan) {
	if p == nil {
		return
	}
	marks, problem := readCaseStarts(files, cr.Cases)
	for i := range cr.Cases {
		cs := &cr.Cases[i]
		decl, declared := p.Cases[cs.ID]
		mark, marked := marks[cs.ID]
		if !declared && !marked {
			continue
		}
		if !declared {
			decl.State = sweep.CacheWarm
		}
		rec := CaseCacheResult{Case: cs.ID, State: decl.State, Marked: marked, Steps: mark.Steps, Error: mark.Error}
		cr.Cache = append(cr.Cache, rec)
		// A case the spec declares nothing of is recorded, never judged.
		if cs.Verdict != result.Pass || !declared {
			continue
		}
		if why := markProblem(rec, p, problem); why != "" {
			invalidate(cs, why)
			continue
		}
		JudgeCacheFigures(cs, decl, p.MaxColdHitRate, true)
	}
}

// markProblem says why what the job did before the case does not give it
// its declared state: nothing marked a cold case (unless the plan resets
// nothing) or a primed one, or a step failed.
func markProblem(rec CaseCacheResult, p *sweep.CachePlan, problem string) string {
	if !rec.Marked {
		switch {
		case rec.State == sweep.CacheCold && p.Reset:
			return fmt.Sprintf("the case is declared cold, and %s has no start line of it from kvsweep job case%s: nothing reset the caches before it", sweep.CaseWindowsFile, problem)
		case rec.State == sweep.CachePrimed:
			return fmt.Sprintf("the case is declared primed, and %s has no start line of it from kvsweep job case%s: nothing ran its priming step", sweep.CaseWindowsFile, problem)
		}
		return ""
	}
	for _, s := range rec.Steps {
		if !s.OK {
			return fmt.Sprintf("before the %s case the job's %s of %s failed: %s", rec.State, s.What, orWord(s.Target, "its target"), orWord(s.Detail, "no detail"))
		}
	}
	if rec.Error != "" {
		return fmt.Sprintf("before the %s case the job failed to set the caches: %s", rec.State, rec.Error)
	}
	return ""
}

// JudgeCacheFigures turns cs, a PASS, into INVALID when its figures break
// its declared state: a cold case whose GPU-local or connector hit rate
// is above maxCold, a warm or primed case whose reuse is below its
// floor. Reuse is the share of the prompt tokens a cache served: the
// GPU-local hit rate and the connector's over the GPU's misses together. With needMeasured, a check
// with no figure to judge by makes the case INVALID too (collect, which
// has the telemetry); without, it is left (a preview of one file).
func JudgeCacheFigures(cs *result.Case, decl sweep.CaseCache, maxCold float64, needMeasured bool) {
	if cs.Verdict != result.Pass {
		return
	}
	get := func(name string) (float64, bool) { m, ok := cs.Metrics.Get(name); return m.Value, ok }
	switch {
	case decl.State == sweep.CacheCold:
		measured := false
		for _, name := range []string{PrefixCacheHitRate, ConnectorHitRate} {
			v, ok := get(name)
			measured = measured || ok
			if ok && v > maxCold {
				invalidate(cs, fmt.Sprintf("the case is declared cold, and its %s is %g, above %g (cache.max_cold_hit_rate): it ran on a warm cache", name, v, maxCold))
				return
			}
		}
		if !measured && needMeasured {
			invalidate(cs, fmt.Sprintf("the case is declared cold and neither %s nor %s was measured in its window: nothing shows the cache was cold", PrefixCacheHitRate, ConnectorHitRate))
		}
	case decl.MinReuse > 0:
		name, v, ok := reuse(get)
		switch {
		case ok && v < decl.MinReuse:
			invalidate(cs, fmt.Sprintf("the case is declared %s with min_reuse %g, and its %s is %g", decl.State, decl.MinReuse, name, v))
		case !ok && needMeasured:
			invalidate(cs, fmt.Sprintf("the case is declared %s with min_reuse %g and neither %s nor %s was measured in its window", decl.State, decl.MinReuse, ConnectorHitRate, PrefixCacheHitRate))
		}
	}
}

// reuse is the share of a case's prompt tokens some cache served. vLLM
// asks its connector only for the tokens the GPU-local cache missed
// (facts metric.counts), so with both rates measured the reuse is
// local + (1 - local) x connector, named for both; with one, that one.
func reuse(get func(string) (float64, bool)) (string, float64, bool) {
	local, hasLocal := get(PrefixCacheHitRate)
	conn, hasConn := get(ConnectorHitRate)
	switch {
	case hasLocal && hasConn:
		return fmt.Sprintf("reuse (%s %g with %s %g of the rest)", PrefixCacheHitRate, local, ConnectorHitRate, conn), local + (1-local)*conn, true
	case hasConn:
		return ConnectorHitRate, conn, true
	}
	return PrefixCacheHitRate, local, hasLocal
}

// invalidate turns cs into INVALID for why, its harness's message kept
// after it, in the words of the validity rules.
func invalidate(cs *result.Case, why string) {
	msg := "the harness said PASS, but " + why
	if cs.Message != "" {
		msg += " (its message: " + cs.Message + ")"
	}
	cs.Verdict, cs.Message = Invalid, msg
}

// readCaseStarts reads the start lines kvsweep job case wrote of the
// cell's cases, the last of each case; a line that is not one (not JSON,
// another event, a case the cell does not report, no cache member) is
// skipped. problem says why the file could not be read, for the
// messages of cases it leaves unmarked ("" when it was, or is absent).
func readCaseStarts(files *sweep.CellFiles, cases []result.Case) (map[string]caseStart, string) {
	if !files.Has(sweep.CaseWindowsFile) {
		return nil, " (the cell has no such file)"
	}
	b, err := files.ReadFile(sweep.CaseWindowsFile, MaxCaseWindowsSize)
	if err != nil {
		return nil, " (it could not be read: " + err.Error() + ")"
	}
	want := map[string]bool{}
	for _, c := range cases {
		want[c.ID] = true
	}
	out := map[string]caseStart{}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		var s caseStart
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &s) != nil || s.Event != "start" || s.Cache == nil || !want[s.Case] {
			continue
		}
		out[s.Case] = bounded(s)
	}
	return out, ""
}

// bounded is s with at most maxCacheSteps steps and each word cut to
// maxStepText: the job's words go into results.json and every report.
func bounded(s caseStart) caseStart {
	if len(s.Steps) > maxCacheSteps {
		s.Steps = s.Steps[:maxCacheSteps]
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		st.What, st.Target, st.Detail = cut(st.What), cut(st.Target), cut(st.Detail)
	}
	s.Error = cut(s.Error)
	return s
}

// cut is s on one line, at most maxStepText bytes (at a rune boundary).
func cut(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxStepText {
		return s
	}
	i := maxStepText
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "..."
}

func orWord(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// Before is what the job did to the caches before the case, in words:
// "reset http://h:8000/reset_prefix_cache: 200 OK; tier_reset kvcr-cli
// flush: exit 0", "FAILED reset ...: 404 Not Found", or that nothing
// marked it.
func (c CaseCacheResult) Before() string {
	if !c.Marked {
		return "no start line from kvsweep job case"
	}
	parts := make([]string, 0, len(c.Steps)+1)
	for _, s := range c.Steps {
		p := strings.TrimSpace(s.What + " " + s.Target)
		if !s.OK {
			p = "FAILED " + p
		}
		if s.Detail != "" {
			p += ": " + s.Detail
		}
		parts = append(parts, p)
	}
	if c.Error != "" {
		parts = append(parts, "error: "+c.Error)
	}
	if len(parts) == 0 {
		return "nothing done"
	}
	return strings.Join(parts, "; ")
}
