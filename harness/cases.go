package harness

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/result"
)

// How the runs of a file are matched to a cell's cases.
const (
	ByLine           = "line"            // the Nth run is the Nth case
	ByTag            = "tag"             // a run's tag is its case id
	ByRequestRate    = "request_rate"    // Values: case -> rate ("inf" for +Inf)
	ByMaxConcurrency = "max_concurrency" // Values: case -> concurrency limit
)

// CaseBys lists them.
var CaseBys = []string{ByLine, ByTag, ByRequestRate, ByMaxConcurrency}

// Mapping says how runs become cases.
type Mapping struct {
	By     string            // one of CaseBys; "" is ByLine
	Values map[string]string // ByRequestRate, ByMaxConcurrency: case id -> value
}

// Cases makes the result of a cell whose cases are ids from the runs of
// one file. The files carry no verdict: a run that completed requests is
// a PASS for the spec's validity rules to judge (failed == 0,
// completed >= 100, ttft_p99_ms < 2000), and one that completed none is
// a FAIL saying so, never a PASS with zeros. Every case must find exactly
// one run and every run a case; what does not is an error naming the line.
func Cases(runs []Run, ids []string, m Mapping, name string) (*result.Result, error) {
	by := m.By
	if by == "" {
		by = ByLine
	}
	var pick func(id string, i int) (int, error)
	switch by {
	case ByLine:
		if len(runs) != len(ids) {
			return nil, fmt.Errorf("%s: %d runs for %d cases (%s): matched by line, each case needs its line; to match each run by what it ran, set harness.result's case_by: tag, request_rate or max_concurrency (with cases: {CASE: VALUE}; --case-by and --value to kvsweep result read), or give each case a cell and a file of its own with case_grouping: separate", name, len(runs), len(ids), strings.Join(ids, ", "))
		}
		pick = func(_ string, i int) (int, error) { return i, nil }
	case ByTag:
		if !slices.ContainsFunc(runs, func(r Run) bool { return r.Tag != "" }) {
			return nil, fmt.Errorf("%s:%d: case_by tag, but no run of the file has a tag: SGLang's bench_serving writes tag only after 0.5.3.post2 and only with --tag, vLLM's bench serve label with --label or framework with --metadata; match the runs by case_by: line, request_rate or max_concurrency instead", name, runs[0].Line)
		}
		pick = func(id string, _ int) (int, error) {
			return find(runs, name, id, func(r Run) bool { return r.Tag == id })
		}
	case ByRequestRate, ByMaxConcurrency:
		pick = func(id string, _ int) (int, error) {
			want, err := parseValue(m.Values[id])
			if err != nil {
				return 0, fmt.Errorf("case %s: %s %q: %v", id, by, m.Values[id], err)
			}
			return find(runs, name, id, func(r Run) bool {
				if by == ByRequestRate {
					return r.HasRequestRate && r.RequestRate == want
				}
				return r.MaxConcurrency == want
			})
		}
	default:
		return nil, fmt.Errorf("unknown case_by %q (expected one of %s)", by, strings.Join(CaseBys, ", "))
	}
	used := map[int]string{}
	res := &result.Result{SchemaVersion: result.SchemaVersion}
	for i, id := range ids {
		j, err := pick(id, i)
		if err != nil {
			return nil, err
		}
		if other, ok := used[j]; ok {
			return nil, fmt.Errorf("%s:%d: the run matches both %s and %s", name, runs[j].Line, other, id)
		}
		used[j] = id
		res.Cases = append(res.Cases, runCase(id, runs[j]))
	}
	for j, r := range runs {
		if _, ok := used[j]; !ok {
			return nil, fmt.Errorf("%s:%d: a run no case matches (by %s; tag %q)", name, r.Line, by, r.Tag)
		}
	}
	return res, nil
}

// find is the one run that matches.
func find(runs []Run, name, id string, match func(Run) bool) (int, error) {
	at := -1
	for j, r := range runs {
		if !match(r) {
			continue
		}
		if at >= 0 {
			return 0, fmt.Errorf("%s:%d and line %d: two runs match case %s", name, runs[at].Line, r.Line, id)
		}
		at = j
	}
	if at < 0 {
		return 0, fmt.Errorf("%s: no run matches case %s", name, id)
	}
	return at, nil
}

func parseValue(s string) (float64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return 0, fmt.Errorf("no value given for the case")
	case "inf", "+inf", "infinity":
		return math.Inf(1), nil
	}
	return strconv.ParseFloat(strings.TrimSpace(s), 64)
}

// runCase is one run as a case: PASS (for the rules to judge) when it
// completed requests, FAIL when it completed none.
func runCase(id string, r Run) result.Case {
	c := result.Case{ID: id, Verdict: result.Pass, Metrics: r.Metrics,
		Message: "no verdict in the file: the spec's validity rules judge it"}
	if r.Completed <= 0 {
		c.Verdict = result.Fail
		c.Message = "the benchmark completed no request"
		if r.HasFailed && r.Failed > 0 {
			c.Message = fmt.Sprintf("the benchmark completed no request: all %g failed", r.Failed)
		}
	}
	if len(r.Notes) > 0 {
		c.Message += " (" + strings.Join(r.Notes, "; ") + ")"
	}
	return c
}

// ReadCases reads a file and matches its runs to ids (each run a case
// named line-N when ids is empty): what collect records of one cell.
func ReadCases(format, name string, b []byte, ids []string, m Mapping) (*result.Result, error) {
	runs, err := ReadRuns(format, name, b)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		for _, r := range runs {
			ids = append(ids, fmt.Sprintf("line-%d", r.Line))
		}
		m = Mapping{By: ByLine}
	}
	return Cases(runs, ids, m, name)
}
