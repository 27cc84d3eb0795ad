package imagebuild

import (
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/provenance"
)

// Plan is what Build will ask BuildKit for: shown by --dry-run.
type Plan struct {
	Revisions provenance.SourceRevisions `json:"source_revisions"`
	// Platforms is what each platform's image records (Revisions is the
	// first platform's).
	Platforms     map[string]provenance.SourceRevisions `json:"platforms"`
	FrontendAttrs map[string]string                     `json:"frontend_attrs"`
	Dockerfile    string                                `json:"dockerfile"`
	Context       string                                `json:"context"`
}

// MakePlan computes the frontend attributes and the source-revisions
// record of a resolved build. builder is the BuildKit version (unknown in
// a dry run).
func MakePlan(r *Resolved, version, buildkit string) *Plan {
	if len(r.Platforms) == 0 {
		r.Platforms = DefaultPlatforms
		if r.Pins != nil && len(r.Pins.Platforms) > 0 {
			r.Platforms = r.Pins.Platforms
		}
	}
	comps := make(map[string]provenance.Component, len(r.Revisions))
	for n, rev := range r.Revisions {
		comps[n] = rev.Component
	}
	rv := provenance.SourceRevisions{SchemaVersion: provenance.SchemaVersion, Components: comps, Base: r.Base, BuildArgs: r.BuildArgs,
		Builder: &provenance.Builder{Kvsweep: version, BuildKit: buildkit},
		Created: time.Unix(r.Epoch, 0).UTC().Format(time.RFC3339)}
	if r.PythonLock != nil {
		rv.PythonLock = &r.PythonLock.File
	}
	attrs := map[string]string{
		"build-arg:BASE_IMAGE":        r.Base.Name + "@" + r.Base.Digest,
		"build-arg:SOURCE_DATE_EPOCH": strconv.FormatInt(r.Epoch, 10),
	}
	if r.Pins != nil {
		platformAttrs(attrs, r)
	}
	for _, pl := range r.Platforms {
		attrs["context:provenance::"+pl] = "local:" + ProvenanceContext(pl)
	}
	if len(r.Platforms) == 1 {
		// One platform: its record is also the plain context, for a
		// stage built for another platform ($BUILDPLATFORM).
		attrs["context:provenance"] = "local:" + ProvenanceContext(r.Platforms[0])
	}
	if r.PythonLock != nil {
		attrs["context:python_lock"] = "local:python_lock"
	}
	for k, v := range r.BuildArgs {
		attrs["build-arg:"+k] = v
	}
	for _, name := range []string{Dynamo, VLLMAdapter} {
		rev, ok := r.Revisions[name]
		if !ok {
			continue // the SGLang image has no vllm_adapter
		}
		up := strings.ToUpper(name)
		attrs["build-arg:"+up+"_REPO"] = rev.Repo
		attrs["build-arg:"+up+"_COMMIT"] = rev.Commit
		attrs["context:"+name] = gitContext(rev)
		attrs["label:dev.kvsweep."+name+".commit"] = rev.Commit
	}
	kv := r.Revisions[KVCR]
	attrs["build-arg:KVCR_COMMIT"] = kv.Commit
	attrs["label:dev.kvsweep.kvcr.commit"] = kv.Commit
	if kv.Dirty {
		attrs["label:dev.kvsweep.kvcr.diff-sha256"] = kv.DiffSHA256
	}
	context := kv.Path
	if kv.Path == "" {
		context = gitContext(kv)
		attrs["context"] = context
	}
	for k, v := range ociLabels(rv) {
		attrs["label:"+k] = v
	}
	df := r.Dockerfile
	if df == "" {
		name, _ := EmbeddedDockerfile(r.engine())
		df = "(embedded) " + path.Base(name)
	}
	plats := platformRevisions(r, rv)
	return &Plan{Revisions: plats[r.Platforms[0]], Platforms: plats, FrontendAttrs: attrs, Dockerfile: df, Context: context}
}

// ociLabels are the standard labels (and manifest annotations) of the image.
func ociLabels(rv provenance.SourceRevisions) map[string]string {
	kv := rv.Components[KVCR]
	m := map[string]string{
		"org.opencontainers.image.revision":    kv.Commit,
		"org.opencontainers.image.created":     rv.Created,
		"org.opencontainers.image.base.name":   rv.Base.Name,
		"org.opencontainers.image.base.digest": rv.Base.Digest,
		"org.opencontainers.image.title":       "kvcr quick-start",
	}
	if kv.Repo != "" {
		m["org.opencontainers.image.source"] = kv.Repo
	}
	return m
}

// gitContext is a BuildKit git source that fetches the ref and refuses any
// commit but the pinned one; .git is kept so the Dockerfile can check too.
func gitContext(rev Revision) string {
	ref := rev.Ref
	if ref == "" {
		ref = rev.Commit
	}
	return rev.Repo + "?ref=" + ref + "&checksum=" + rev.Commit + "&keep-git-dir=true"
}

// SortedAttrs lists attributes as KEY=VALUE lines, for --dry-run.
func SortedAttrs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
