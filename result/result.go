// Package result is the contract between a cell's harness and kvsweep:
// result.json, schema version 1 (schema/result.v1.json). It owns the
// schema, the parser that holds a document to it and says what is wrong
// and where (a JSON pointer, a line and column), the mapping of a
// harness's native result file onto it (a spec's native_result), and a
// case's metrics. A fast path reads the common document in one pass; the
// JSON Schema validator is the reference and decides everything else.
package result

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/kaptinlin/jsonschema"

	"github.com/kvsweep/kvsweep/provenance"
)

// SchemaVersion of result.json this kvsweep reads.
const SchemaVersion = 1

//go:embed schema/result.v1.json
var schemaJSON []byte

// Result is a cell's result.json.
type Result struct {
	SchemaVersion int            `json:"schema_version"`
	SweepID       string         `json:"sweep_id,omitempty"`
	CellID        string         `json:"cell_id"`
	Params        map[string]any `json:"params,omitempty"`
	Image         *Image         `json:"image,omitempty"`
	Slurm         *SlurmInfo     `json:"slurm,omitempty"`
	Started       string         `json:"started,omitempty"`
	Finished      string         `json:"finished,omitempty"`
	Cases         []Case         `json:"cases"`
	Evidence      []string       `json:"evidence,omitempty"`
}

// Image is the image a cell ran in and what it was built from.
type Image struct {
	Ref             string                      `json:"ref,omitempty"`
	Digest          string                      `json:"digest,omitempty"`
	SourceRevisions *provenance.SourceRevisions `json:"source_revisions,omitempty"`
}

// SlurmInfo is where a cell ran.
type SlurmInfo struct {
	JobID       string `json:"job_id,omitempty"`
	ArrayJobID  string `json:"array_job_id,omitempty"`
	ArrayTaskID string `json:"array_task_id,omitempty"`
	Nodes       string `json:"nodes,omitempty"`
	Partition   string `json:"partition,omitempty"`
	State       string `json:"state,omitempty"`
	ExitCode    *int   `json:"exit_code,omitempty"`
}

// Case is one test case of a cell.
type Case struct {
	ID        string  `json:"id"`
	Verdict   string  `json:"verdict"`
	DurationS float64 `json:"duration_s,omitempty"`
	Message   string  `json:"message,omitempty"`
	Metrics   Metrics `json:"metrics,omitempty"`
}

// Metric is one measured figure; Direction says which way is better.
type Metric struct {
	Name      string  `json:"-"` // its key in the case's metrics
	Value     float64 `json:"value"`
	Unit      string  `json:"unit,omitempty"`
	Direction string  `json:"direction,omitempty"` // lower or higher
}

// Verdicts.
const (
	Pass  = "PASS"
	Fail  = "FAIL"
	Skip  = "SKIP"
	Error = "ERROR"
)

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

func compiled() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.SetAssertFormat(true)
		schema, schemaErr = c.Compile(schemaJSON)
	})
	return schema, schemaErr
}

// Schema is the result.json v1 JSON Schema, as kvsweep result schema
// prints it.
func Schema() []byte { return append([]byte(nil), schemaJSON...) }

// ParseResult validates b against the result.json v1 schema and decodes it.
// The error says what is wrong and where (a JSON pointer).
func ParseResult(b []byte) (*Result, error) {
	var sc *Scratch
	return sc.Parse(b)
}

// Parse is ParseResult reusing the scratch of the fast path from
// document to document (a nil *Scratch: a fresh one).
func (sc *Scratch) Parse(b []byte) (*Result, error) {
	if r, ok := fastResult(b, sc); ok {
		return r, nil
	}
	return parseResultRef(b)
}

// parseResultRef is ParseResult through the generic tree and the JSON
// Schema validator: the reference fastResult is held to, and the path that
// explains a refusal.
func parseResultRef(b []byte) (*Result, error) {
	doc, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	if errs := problemsOf(b, doc); len(errs) > 0 {
		// The first in the document, as a reader going down it meets them.
		return nil, errs[0]
	}
	// The validated tree has the shape the schema promises; converting it
	// costs far less than parsing the bytes a second time.
	return fromDoc(doc.(map[string]any)), nil
}

// validateTree checks a document decodeJSON read against the schema.
func validateTree(doc any) error {
	ps, err := schemaProblems(doc)
	if err != nil {
		return err
	}
	if len(ps) > 0 {
		return ps[0]
	}
	return nil
}

// evaluate runs the schema's validator on a document decodeJSON read.
func evaluate(doc any) (*jsonschema.EvaluationResult, error) {
	sch, err := compiled()
	if err != nil {
		return nil, fmt.Errorf("result schema: %v", err)
	}
	// The validator reads the document itself: it is given the tree as
	// decodeJSON has it (invalid UTF-8 replaced, as encoding/json does).
	canon, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return sch.ValidateJSON(canon), nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func number(v any) float64 {
	switch n := v.(type) {
	case json.Number:
		f, _ := n.Float64()
		return f
	case float64:
		return n
	}
	return 0
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// fromDoc converts a result.json tree that passed the schema.
func fromDoc(m map[string]any) *Result {
	r := &Result{SchemaVersion: SchemaVersion, SweepID: str(m["sweep_id"]), CellID: str(m["cell_id"]),
		Started: str(m["started"]), Finished: str(m["finished"])}
	if p := obj(m["params"]); p != nil {
		r.Params = make(map[string]any, len(p))
		for k, v := range p {
			if n, ok := v.(json.Number); ok {
				v = number(n)
			}
			r.Params[k] = v
		}
	}
	if im := obj(m["image"]); im != nil {
		r.Image = &Image{Ref: str(im["ref"]), Digest: str(im["digest"])}
		if sr := obj(im["source_revisions"]); sr != nil {
			// The harness's copy of the image's record, in its one format.
			if b, err := json.Marshal(sr); err == nil {
				r.Image.SourceRevisions, _ = provenance.Parse(b)
			}
		}
	}
	if sl := obj(m["slurm"]); sl != nil {
		r.Slurm = &SlurmInfo{JobID: str(sl["job_id"]), ArrayJobID: str(sl["array_job_id"]), ArrayTaskID: str(sl["array_task_id"]),
			Nodes: str(sl["nodes"]), Partition: str(sl["partition"]), State: str(sl["state"])}
		if v, ok := sl["exit_code"]; ok {
			code := int(number(v))
			r.Slurm.ExitCode = &code
		}
	}
	cases, _ := m["cases"].([]any)
	r.Cases = make([]Case, 0, len(cases))
	for _, c := range cases {
		cm := obj(c)
		cs := Case{ID: str(cm["id"]), Verdict: str(cm["verdict"]), DurationS: number(cm["duration_s"]), Message: str(cm["message"])}
		if ms := obj(cm["metrics"]); len(ms) > 0 {
			cs.Metrics = make(Metrics, 0, len(ms))
			for _, name := range slices.Sorted(maps.Keys(ms)) {
				mm := obj(ms[name])
				cs.Metrics = append(cs.Metrics, Metric{Name: name, Value: number(mm["value"]), Unit: str(mm["unit"]), Direction: str(mm["direction"])})
			}
		}
		r.Cases = append(r.Cases, cs)
	}
	ev, _ := m["evidence"].([]any)
	for _, e := range ev {
		r.Evidence = append(r.Evidence, str(e))
	}
	return r
}

// applicators are the keywords whose error only says that a member or
// item below failed; the error that says why is further down.
var applicators = map[string]bool{
	"properties": true, "additionalProperties": true, "patternProperties": true,
	"items": true, "prefixItems": true, "contains": true, "$ref": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
	"dependentSchemas": true, "propertyNames": true, "unevaluatedProperties": true, "unevaluatedItems": true,
}
