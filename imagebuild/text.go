package imagebuild

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kvsweep/kvsweep/provenance"
)

// WriteText prints a dry run's plan: the source-revisions.json the image
// would record, the Dockerfile, the context and the frontend attributes.
func (p *Plan) WriteText(w io.Writer) error {
	var recs any = p.Revisions
	if len(p.Platforms) > 1 {
		recs = p.Platforms // one record per platform
	}
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "source-revisions.json:\n%s\n\ndockerfile: %s\ncontext: %s\nfrontend attributes:\n", b, p.Dockerfile, p.Context)
	for _, a := range SortedAttrs(p.FrontendAttrs) {
		fmt.Fprintf(w, "  %s\n", a)
	}
	return nil
}

// Describe is "dynamo@COMMIT vllm_adapter@COMMIT kvcr@COMMIT[+dirty] on
// BASE@DIGEST" (the components the image records: an SGLang image has no
// vllm_adapter), with ", layered on IMAGE@DIGEST" for a layered image.
func Describe(rv *provenance.SourceRevisions) string {
	var parts []string
	for _, n := range rv.Names() {
		c := rv.Components[n]
		s := n + "@" + c.Commit
		if c.Dirty {
			s += "+dirty"
		}
		parts = append(parts, s)
	}
	s := strings.Join(parts, " ") + " on " + rv.Base.Name + "@" + rv.Base.Digest
	if l := rv.LayeredOn; l != nil {
		s += ", layered on " + l.Name + "@" + l.Digest
	}
	return s
}

// WriteText prints what an image records: digest, base, builder, each
// component's commit and the labels.
func (in *Inspection) WriteText(w io.Writer) {
	fmt.Fprintf(w, "image:   %s\ndigest:  %s\n", in.Ref, in.Digest)
	if in.Platform != "" {
		fmt.Fprintf(w, "platform: %s\n", in.Platform)
	}
	if in.Index != "" {
		fmt.Fprintf(w, "index:   %s\n", in.Index)
	}
	if rv := in.Revisions; rv != nil {
		var b provenance.Builder
		if rv.Builder != nil {
			b = *rv.Builder
		}
		fmt.Fprintf(w, "base:    %s@%s\ncreated: %s\nbuilder: kvsweep %s, BuildKit %s\n", rv.Base.Name, rv.Base.Digest, rv.Created, b.Kvsweep, b.BuildKit)
		if l := rv.LayeredOn; l != nil {
			fmt.Fprintf(w, "layered on: %s@%s (replaced: %s)\n", l.Name, l.Digest, strings.Join(l.Replaced, ", "))
		}
		for _, n := range rv.Names() {
			c := rv.Components[n]
			dirty := ""
			if c.Dirty {
				dirty = " dirty, diff sha256 " + c.DiffSHA256
			}
			fmt.Fprintf(w, "%-13s %s  %s %s%s\n", n+":", c.Commit, c.Repo, c.Ref, dirty)
		}
	}
	fmt.Fprintln(w, "labels:")
	for _, kv := range SortedAttrs(in.Labels) {
		fmt.Fprintf(w, "  %s\n", kv)
	}
}

// WriteInspections prints the inspections of an image: as text, one after
// the other; as JSON, the one object of a plain image, or a list.
func WriteInspections(w io.Writer, ins []*Inspection, asJSON bool) error {
	if !asJSON {
		for _, in := range ins {
			in.WriteText(w)
		}
		return nil
	}
	var v any = ins
	if len(ins) == 1 {
		v = ins[0]
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// WriteVerify prints that each platform's image of ref matches the pins
// file, or returns the error naming every mismatch (VerifyAll).
func WriteVerify(w io.Writer, ref, pins string, ins []*Inspection, r *Resolved) error {
	if ms := VerifyAll(ins, r); len(ms) > 0 {
		lines := make([]string, len(ms))
		for i, m := range ms {
			lines[i] = "  " + m.String()
		}
		return fmt.Errorf("%s does not match %s:\n%s", ref, pins, strings.Join(lines, "\n"))
	}
	for _, in := range ins {
		on := ref
		if in.Platform != "" && len(ins) > 1 {
			on += " " + in.Platform
		}
		fmt.Fprintf(w, "%s matches %s: %s\n", on, pins, Describe(in.Revisions))
	}
	return nil
}
