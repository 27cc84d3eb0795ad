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
	b, err := json.MarshalIndent(p.Revisions, "", "  ")
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
