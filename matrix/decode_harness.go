package matrix

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

func (d *decoder) harness(n ast.Node, where string, h *Harness) {
	d.Fields(n, where,
		yamlpos.F("command", func(n ast.Node, w string) {
			items := d.List(n, w)
			if len(items) == 0 && len(d.Errs) == 0 {
				d.Errorf(n, "%s: empty (expected the harness argv, for example [python3, -m, tests.e2e.phase1])", w)
			}
			h.Command = d.templates(items, w)
		}),
		yamlpos.F("cases_flag", func(n ast.Node, w string) { h.CasesFlag = d.Str(n, w) }),
		yamlpos.F("result_adapter", func(n ast.Node, w string) {
			for i, v := range d.StrList(n, w) {
				if i == 0 && (v.S == "" || strings.HasPrefix(v.S, "-")) {
					d.ErrAt(v, "%s[0]: %q is not a command (expected the adapter program, like python3 or /opt/kvcr/adapter.py)", w, v.S)
				}
				h.ResultAdapter = append(h.ResultAdapter, v.S)
			}
			if len(h.ResultAdapter) == 0 && len(d.Errs) == 0 {
				d.Errorf(n, "%s: empty (expected the adapter's argv; it gets the cell directory as its last argument)", w)
			}
		}),
		yamlpos.F("native_result", func(n ast.Node, w string) { h.Native = d.native(n, w) }),
		yamlpos.F("result", func(n ast.Node, w string) {
			if h.Client = d.client(n, w); h.Native != nil {
				d.Errorf(n, "%s: a cell's result comes from one place: remove native_result or result", w)
			}
		}),
	)
	if h.Command == nil && len(d.Errs) == 0 {
		d.Errorf(n, "%s: missing required key \"command\"", where)
	}
}

var pointerRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(/([^/~]|~[01])*)*$`) })

// native reads harness.native_result: {file, cases: {ID|*: {verdict,
// message, metrics: {NAME: {pointer, unit, direction, scale}}}}}.
func (d *decoder) native(n ast.Node, where string) *NativeResult {
	nr := &NativeResult{Cases: map[string]NativeCase{}}
	ptr := func(n ast.Node, w string) string {
		v, _ := d.Scalar(n, w)
		if p := strings.ReplaceAll(v.S, "{case}", "x"); !pointerRE().MatchString(p) || v.S == "" {
			d.ErrAt(v, "%s: %q is not a JSON pointer (expected /key/0/key, with {case} for the case id)", w, v.S)
		}
		return v.S
	}
	d.Fields(n, where,
		yamlpos.F("file", func(n ast.Node, w string) {
			nr.File = d.line(n, w)
			if nr.File == "" || strings.HasPrefix(nr.File, "/") || slices.Contains(strings.Split(nr.File, "/"), "..") {
				d.Errorf(n, "%s: %q is not a path inside the cell directory (expected a relative path without ..)", w, nr.File)
			}
		}),
		yamlpos.F("cases", func(n ast.Node, w string) {
			for _, kv := range d.Mapping(n, w) {
				wc := yamlpos.Join(w, kv.Key)
				var c NativeCase
				d.Fields(kv.Value, wc,
					yamlpos.F("verdict", func(n ast.Node, w string) { c.Verdict = ptr(n, w) }),
					yamlpos.F("message", func(n ast.Node, w string) { c.Message = ptr(n, w) }),
					yamlpos.F("metrics", func(n ast.Node, w string) {
						c.Metrics = map[string]NativeMetric{}
						for _, mk := range d.Mapping(n, w) {
							wm := yamlpos.Join(w, mk.Key)
							m := NativeMetric{Scale: 1}
							d.Fields(mk.Value, wm,
								yamlpos.F("pointer", func(n ast.Node, w string) { m.Pointer = ptr(n, w) }),
								yamlpos.F("unit", func(n ast.Node, w string) { m.Unit = d.Str(n, w) }),
								yamlpos.F("direction", func(n ast.Node, w string) { m.Direction = d.oneOf(n, w, []string{"lower", "higher"}) }),
								yamlpos.F("scale", func(n ast.Node, w string) {
									v, _ := d.Scalar(n, w)
									f, err := strconv.ParseFloat(v.S, 64)
									if err != nil || f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
										d.ErrAt(v, "%s: %q is not a factor (expected a finite non-zero number, like 1000 for s to ms)", w, v.S)
									}
									m.Scale = f
								}),
							)
							if m.Pointer == "" && len(d.Errs) == 0 {
								d.Errorf(mk.KeyN, "%s: missing required key \"pointer\"", wm)
							}
							c.Metrics[mk.Key] = m
						}
					}),
				)
				if c.Verdict == "" && len(d.Errs) == 0 {
					d.Errorf(kv.KeyN, "%s: missing required key \"verdict\"", wc)
				}
				nr.Cases[kv.Key] = c
			}
		}),
	)
	if nr.File == "" && len(d.Errs) == 0 {
		d.Errorf(n, "%s: missing required key \"file\"", where)
	}
	return nr
}

// client reads harness.result: {format, file, case_by, cases: {ID: VALUE}}.
func (d *decoder) client(n ast.Node, where string) *ClientResult {
	cr := &ClientResult{}
	var casesN ast.Node
	d.Fields(n, where,
		yamlpos.F("format", func(n ast.Node, w string) { cr.Format = d.oneOf(n, w, ClientFormats) }),
		yamlpos.F("file", func(n ast.Node, w string) {
			cr.File = d.line(n, w)
			if cr.File == "" || strings.HasPrefix(cr.File, "/") || slices.Contains(strings.Split(cr.File, "/"), "..") {
				d.Errorf(n, "%s: %q is not a path inside the cell directory (expected a relative path without ..)", w, cr.File)
			}
		}),
		yamlpos.F("case_by", func(n ast.Node, w string) { cr.CaseBy = d.oneOf(n, w, ClientCaseBys) }),
		yamlpos.F("cases", func(n ast.Node, w string) { casesN = n; cr.Values, _ = d.StrMap(n, w) }),
	)
	for _, k := range []string{"format", "file"} {
		if (k == "format" && cr.Format == "" || k == "file" && cr.File == "") && len(d.Errs) == 0 {
			d.Errorf(n, "%s: missing required key %q", where, k)
		}
	}
	byValue := cr.CaseBy == "request_rate" || cr.CaseBy == "max_concurrency"
	switch {
	case byValue && casesN == nil && len(d.Errs) == 0:
		d.Errorf(n, "%s: case_by %s needs cases: {CASE: VALUE} (the %s of each case's run)", where, cr.CaseBy, cr.CaseBy)
	case !byValue && casesN != nil:
		d.Errorf(casesN, "%s: cases gives the value of each case's run for case_by request_rate or max_concurrency, not %s; remove cases", yamlpos.Join(where, "cases"), cmp.Or(cr.CaseBy, "line"))
	}
	return cr
}
