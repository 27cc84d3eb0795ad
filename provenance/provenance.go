// Package provenance reads and compares source-revisions.json, the record
// an image keeps of what it was built from (/opt/kvcr-build/ inside the
// image). kvsweep image build writes it; jobs copy it into each cell
// directory; collect and the reports read it back; image verify compares
// it with pins. This package is the one reader of that format, small
// enough for every side to import.
package provenance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Path is where an image records what it was built from.
const Path = "/opt/kvcr-build/source-revisions.json"

// MaxSize bounds a source-revisions.json.
const MaxSize = 1 << 20

// SchemaVersion of source-revisions.json.
const SchemaVersion = 1

// The components of the quick-start image.
const (
	Dynamo      = "dynamo"
	VLLMAdapter = "vllm_adapter"
	KVCR        = "kvcr"
)

// Order is the display order of the components; others follow sorted.
var Order = []string{Dynamo, VLLMAdapter, KVCR}

// SourceRevisions is source-revisions.json.
type SourceRevisions struct {
	SchemaVersion int                  `json:"schema_version"`
	Components    map[string]Component `json:"components"`
	Base          Base                 `json:"base"`
	BuildArgs     map[string]string    `json:"build_args,omitempty"`
	Builder       *Builder             `json:"builder,omitempty"`
	Created       string               `json:"created,omitempty"` // SOURCE_DATE_EPOCH, RFC 3339
	// Platform is the platform this image was built for (linux/amd64,
	// linux/arm64); "" in a record written before images had several.
	Platform string `json:"platform,omitempty"`
	// PythonLock is the lock file of the image's Python inputs.
	PythonLock *File `json:"python_lock,omitempty"`
	// LayeredOn is the image a layered build (kvsweep image layer)
	// started from; nil for an image built from pins.
	LayeredOn *Layer `json:"layered_on,omitempty"`
}

// Layer is the image a layered build started from: every component but
// Replaced is as that image recorded it.
type Layer struct {
	Name     string   `json:"name"`
	Digest   string   `json:"digest"`
	Replaced []string `json:"replaced"`
}

// File is an input file of the build, by name and content hash.
type File struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// Component is what one source component was built from.
type Component struct {
	Repo       string `json:"repo,omitempty"`
	Ref        string `json:"ref,omitempty"` // as pinned
	Commit     string `json:"commit"`
	Moving     bool   `json:"moving,omitempty"` // the ref is a branch
	Dirty      bool   `json:"dirty"`
	DiffSHA256 string `json:"diff_sha256,omitempty"` // of the uncommitted changes of a dirty checkout
}

// Base is the base image, by name and digest.
type Base struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// Builder names what built the image.
type Builder struct {
	Kvsweep  string `json:"kvsweep"`
	BuildKit string `json:"buildkit"`
}

// Parse reads a source-revisions.json: at most MaxSize bytes, one JSON
// object of schema_version 1 with at least one component, each with a
// commit. The error says what is wrong.
func Parse(b []byte) (*SourceRevisions, error) {
	if len(b) > MaxSize {
		return nil, fmt.Errorf("source-revisions.json: %d bytes, over the %d-byte limit", len(b), MaxSize)
	}
	var s SourceRevisions
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("source-revisions.json: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("source-revisions.json: data after the JSON object")
	}
	if s.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("source-revisions.json: schema_version %d is not supported (expected %d)", s.SchemaVersion, SchemaVersion)
	}
	if len(s.Components) == 0 {
		return nil, fmt.Errorf("source-revisions.json: no components")
	}
	for _, n := range slices.Sorted(maps.Keys(s.Components)) {
		if s.Components[n].Commit == "" {
			return nil, fmt.Errorf("source-revisions.json: component %q has no commit", n)
		}
	}
	return &s, nil
}

// Names returns the component names in display order.
func (s *SourceRevisions) Names() []string {
	var out []string
	for _, n := range Order {
		if _, ok := s.Components[n]; ok {
			out = append(out, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(s.Components)) {
		if !slices.Contains(Order, n) {
			out = append(out, n)
		}
	}
	return out
}

// Commit is the commit recorded for a component, or "".
func (s *SourceRevisions) Commit(name string) string {
	if s == nil {
		return ""
	}
	return s.Components[name].Commit
}

// Short is "dynamo@1a2b3c4 vllm_adapter@5d6e7f8 kvcr@9a0b1c2+dirty";
// empty for nil.
func (s *SourceRevisions) Short() string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, n := range s.Names() {
		c := s.Components[n]
		short := c.Commit
		if len(short) > 7 {
			short = short[:7]
		}
		if c.Dirty {
			short += "+dirty"
		}
		parts = append(parts, n+"@"+short)
	}
	return strings.Join(parts, " ")
}

// Mismatch is a component whose recorded revision differs from what was
// expected.
type Mismatch struct {
	Component string `json:"component"`
	Image     string `json:"image"`
	Pins      string `json:"pins"`
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s: the image has %s, the pins resolve to %s", m.Component, m.Image, m.Pins)
}

// Compare returns how got (what an image records) differs from want:
// every component of want with another commit or dirty state, and the
// base digest when want names one. A nil got is one mismatch.
func Compare(got, want *SourceRevisions) []Mismatch {
	if got == nil {
		return []Mismatch{{Component: "source-revisions.json", Image: "missing", Pins: "required"}}
	}
	var out []Mismatch
	for _, n := range slices.Sorted(maps.Keys(want.Components)) {
		w := want.Components[n]
		g, ok := got.Components[n]
		switch {
		case !ok:
			out = append(out, Mismatch{n, "nothing", w.Commit})
		case g.Commit != w.Commit:
			out = append(out, Mismatch{n, g.Commit, w.Commit})
		case g.Dirty != w.Dirty || g.DiffSHA256 != w.DiffSHA256:
			out = append(out, Mismatch{n, fmt.Sprintf("%s dirty=%v diff %s", g.Commit, g.Dirty, g.DiffSHA256),
				fmt.Sprintf("%s dirty=%v diff %s", w.Commit, w.Dirty, w.DiffSHA256)})
		}
	}
	if want.Base.Digest != "" && got.Base.Digest != want.Base.Digest {
		out = append(out, Mismatch{"base", got.Base.Name + "@" + got.Base.Digest, want.Base.Name + "@" + want.Base.Digest})
	}
	return out
}
