package harness

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
)

// MaxNativeSize is the largest native result file FromNative decodes.
const MaxNativeSize = 64 << 20

// FromNative builds a cell's result from the harness's own JSON (b, the
// file nr.File) by the spec's mapping: each planned case's verdict,
// message and metrics at their JSON pointers. A pointer that leads
// nowhere, a verdict that is not one, or a metric that is not a finite
// number is an error naming the case, the pointer and what was found:
// never a silent zero.
//
// The file is pre-scanned first (jsonscan.Bound): past MaxNativeSize
// bytes or nested past 64 levels it is refused with its line and column
// before anything decodes it.
func FromNative(nr *sweep.NativeResult, b []byte, c sweep.Cell) (*result.Result, error) {
	if err := jsonscan.Bound(b, jsonscan.MaxDepth, MaxNativeSize); err != nil {
		return nil, fmt.Errorf("%s:%v", nr.File, err)
	}
	doc, err := jsonscan.DecodeTree(b)
	if err != nil {
		return nil, err
	}
	r := &result.Result{SchemaVersion: result.SchemaVersion, CellID: c.ID}
	for _, id := range c.Cases {
		m, ok := nr.Cases[id]
		if !ok {
			if m, ok = nr.Cases["*"]; !ok {
				continue // the mapping says nothing of this case: not reported
			}
		}
		at := func(p string) string { return strings.ReplaceAll(p, "{case}", jsonscan.EscapePointer(id)) }
		v, err := lookup(doc, at(m.Verdict))
		if err != nil {
			return nil, fmt.Errorf("%s: verdict at %s: %v", id, at(m.Verdict), err)
		}
		verdict, err := nativeVerdict(v)
		if err != nil {
			return nil, fmt.Errorf("%s: verdict at %s: %v", id, at(m.Verdict), err)
		}
		cs := result.Case{ID: id, Verdict: verdict}
		if m.Message != "" {
			if v, err := lookup(doc, at(m.Message)); err == nil {
				cs.Message, _ = v.(string)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(m.Metrics)) {
			mm := m.Metrics[name]
			v, err := lookup(doc, at(mm.Pointer))
			if err != nil {
				return nil, fmt.Errorf("%s: metric %s at %s: %v", id, name, at(mm.Pointer), err)
			}
			f, err := nativeNumber(v)
			if err != nil {
				return nil, fmt.Errorf("%s: metric %s at %s: %v", id, name, at(mm.Pointer), err)
			}
			if mm.Scale != 0 {
				f *= mm.Scale
			}
			cs.Metrics = append(cs.Metrics, result.Metric{Name: name, Value: f, Unit: mm.Unit, Direction: mm.Direction})
		}
		r.Cases = append(r.Cases, cs)
	}
	return r, nil
}

// lookup follows a JSON pointer (RFC 6901) through a decoded document.
func lookup(doc any, ptr string) (any, error) {
	if ptr == "" {
		return doc, nil
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[tok]
			if !ok {
				return nil, fmt.Errorf("no key %q there", tok)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, fmt.Errorf("no element %q in a list of %d", tok, len(t))
			}
			cur = t[i]
		default:
			return nil, fmt.Errorf("%s is not an object or a list, so it has no %q", nativeKind(cur), tok)
		}
	}
	return cur, nil
}

// nativeVerdict reads a harness's verdict: a boolean (passed or not) or
// one of PASS, FAIL, SKIP, ERROR and the words harnesses write for them
// (passed, ok, success, failed, failure, skipped, error), in any case.
func nativeVerdict(v any) (string, error) {
	switch t := v.(type) {
	case bool:
		if t {
			return result.Pass, nil
		}
		return result.Fail, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "pass", "passed", "ok", "success", "succeeded":
			return result.Pass, nil
		case "fail", "failed", "failure":
			return result.Fail, nil
		case "skip", "skipped":
			return result.Skip, nil
		case "error", "errored":
			return result.Error, nil
		}
		return "", fmt.Errorf("%q is not a verdict (expected true/false, or PASS, FAIL, SKIP, ERROR or their past tense)", t)
	}
	return "", fmt.Errorf("%s is not a verdict (expected a boolean or a string)", nativeKind(v))
}

// nativeNumber reads a metric: a JSON number, or a string holding one.
func nativeNumber(v any) (float64, error) {
	var s string
	switch t := v.(type) {
	case json.Number:
		s = t.String()
	case string:
		s = strings.TrimSpace(t)
	default:
		return 0, fmt.Errorf("%s is not a number", nativeKind(v))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	return f, nil
}

func nativeKind(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case bool:
		return strconv.FormatBool(t)
	case json.Number:
		return t.String()
	case string:
		return strconv.Quote(t)
	}
	return fmt.Sprintf("%v", v)
}
