package result

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kaptinlin/jsonschema"
)

// Problems is everything wrong with b as a result.json v1, in the order
// of the document (line, then column): a syntax error alone, else the
// unsupported version and every value the schema refuses, one per JSON
// pointer. ParseResult's error is the first of them. Nil when b is valid.
func Problems(b []byte) []error {
	doc, err := decodeJSON(b)
	if err != nil {
		return []error{err}
	}
	return problemsOf(b, doc)
}

// problemsOf is Problems of b, whose tree decodeJSON read as doc.
func problemsOf(b []byte, doc any) []error {
	var out []*PointerError
	if m, ok := doc.(map[string]any); ok {
		if v, ok := m["schema_version"]; ok && fmt.Sprint(v) != fmt.Sprint(SchemaVersion) {
			out = append(out, &PointerError{Pointer: "/schema_version", Msg: fmt.Sprintf("version %v is not supported (expected %d)", v, SchemaVersion)})
		}
	}
	ps, err := schemaProblems(doc)
	if err != nil {
		return []error{err}
	}
	for _, p := range ps {
		if !slices.ContainsFunc(out, func(q *PointerError) bool { return q.Pointer == p.Pointer }) {
			out = append(out, p)
		}
	}
	type placed struct {
		line, col int
		p         *PointerError
	}
	var sorted []placed
	for _, p := range out {
		l, c, ok := Locate(b, p.Pointer)
		if !ok && slices.ContainsFunc(out, func(q *PointerError) bool { return q != p && within(p.Pointer, q.Pointer) }) {
			// A member that is not there, already said by its parent
			// ("required property ... is missing").
			continue
		}
		for up := p.Pointer; !ok && up != ""; {
			up = up[:max(0, strings.LastIndexByte(up, '/'))]
			l, c, ok = Locate(b, up)
		}
		sorted = append(sorted, placed{l, c, p})
	}
	slices.SortStableFunc(sorted, func(x, y placed) int {
		if x.line != y.line {
			return x.line - y.line
		}
		if x.col != y.col {
			return x.col - y.col
		}
		return strings.Compare(x.p.Pointer, y.p.Pointer)
	})
	errs := make([]error, len(sorted))
	for i, s := range sorted {
		errs[i] = s.p
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// within reports whether the JSON pointer p is below parent.
func within(p, parent string) bool {
	return parent == "/" || strings.HasPrefix(p, parent+"/")
}

// schemaProblems is every refusal of the schema's validator, at the
// deepest place that says why: a level's own error (a required member
// missing, a value not allowed), else an applicator's where no member or
// item below it failed.
func schemaProblems(doc any) ([]*PointerError, error) {
	res, err := evaluate(doc)
	if err != nil || res.IsValid() {
		return nil, err
	}
	var out []*PointerError
	var walk func(r *jsonschema.EvaluationResult, ptr string)
	walk = func(r *jsonschema.EvaluationResult, ptr string) {
		ptr += r.InstanceLocation
		var own, applied []string
		for k := range r.Errors {
			if applicators[k] {
				applied = append(applied, k)
			} else {
				own = append(own, k)
			}
		}
		below := false
		for _, d := range r.Details {
			if !d.Valid {
				below = true
			}
		}
		switch {
		case len(own) > 0:
			out = append(out, pointerError(ptr, r.Errors[slices.Min(own)].Error()))
		case len(applied) > 0 && !below:
			out = append(out, pointerError(ptr, r.Errors[slices.Min(applied)].Error()))
		}
		for _, d := range r.Details {
			if !d.Valid {
				walk(d, ptr)
			}
		}
	}
	walk(res, "")
	if len(out) == 0 {
		out = append(out, pointerError("", "does not match the schema"))
	}
	return out, nil
}

// pointerError is a refusal at ptr ("" is the document), its message
// starting in lower case as the rest of kvsweep's messages do.
func pointerError(ptr, msg string) *PointerError {
	if ptr == "" {
		ptr = "/"
	}
	if msg != "" {
		msg = strings.ToLower(msg[:1]) + msg[1:]
	}
	return &PointerError{Pointer: ptr, Msg: msg}
}
