package imagebuild

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
	"github.com/kvsweep/kvsweep/provenance"
)

// The platforms kvsweep builds images for: x86-64 hosts and the aarch64
// hosts of Grace Hopper and Grace Blackwell nodes.
const (
	PlatformAMD64 = "linux/amd64"
	PlatformARM64 = "linux/arm64"
)

// Platforms are the platforms a pins file may name.
var Platforms = []string{PlatformAMD64, PlatformARM64}

// DefaultPlatforms is what a pins file without a platforms key builds.
var DefaultPlatforms = []string{PlatformAMD64}

// Arch is the architecture of a platform ("arm64" of "linux/arm64"), as
// BuildKit's TARGETARCH says it.
func Arch(platform string) string {
	_, arch, _ := strings.Cut(platform, "/")
	return arch
}

// PlatformArg is the build argument that carries a per-platform value of
// name for platform: PROTOC_SHA256_ARM64; the Dockerfile picks it by
// TARGETARCH.
func PlatformArg(name, platform string) string {
	return name + "_" + strings.ToUpper(Arch(platform))
}

// ParsePlatforms reads a --platform value: platforms separated by commas,
// each one of Platforms, none twice.
// Empty is nil: the pins' platforms.
func ParsePlatforms(s string) ([]string, error) {
	var out []string
	if s == "" {
		return nil, nil
	}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		switch {
		case !slices.Contains(Platforms, p):
			return nil, fmt.Errorf("platform %q: expected %s, separated by commas", p, strings.Join(Platforms, " or "))
		case slices.Contains(out, p):
			return nil, fmt.Errorf("platform %s is named twice", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// WithPlatforms builds for these platforms (a subset of the pins'),
// instead of every platform the pins name.
func WithPlatforms(ps []string) Option {
	return func(o *options) error { o.platforms = ps; return nil }
}

func isMapping(n ast.Node) bool {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return true
	}
	return false
}

// platforms decodes the platforms key: a list of Platforms, none twice.
func (p *Pins) platforms(d *yamlpos.Decoder, n ast.Node, w string) {
	p.Platforms, p.platformsPos = nil, yamlpos.PosOf(n)
	for _, v := range d.StrList(n, w) {
		switch {
		case !slices.Contains(Platforms, v.S):
			d.ErrAt(v, "%s: %q is not a platform kvsweep builds for (expected %s)", w, v.S, strings.Join(Platforms, " or "))
		case slices.Contains(p.Platforms, v.S):
			d.ErrAt(v, "%s: %s is listed twice", w, v.S)
		default:
			p.Platforms = append(p.Platforms, v.S)
		}
	}
	if len(p.Platforms) == 0 && len(d.Errs) == 0 {
		d.Errorf(n, "%s: no platform (expected a list of %s)", w, strings.Join(Platforms, ", "))
	}
}

// checkPlatformArgs refuses a per-platform build argument that does not
// give exactly one value for every platform of the pins.
func (p *Pins) checkPlatformArgs(d *yamlpos.Decoder) {
	for _, k := range slices.Sorted(maps.Keys(p.PlatformArgs)) {
		vals := p.PlatformArgs[k]
		pos := yamlpos.Value{Pos: yamlpos.Pos{Line: p.argLines[k], Col: 3}}
		for _, pl := range slices.Sorted(maps.Keys(vals)) {
			if !slices.Contains(p.Platforms, pl) {
				d.ErrAt(pos, "build_args.%s: %q is not one of the pins' platforms (%s)", k, pl, strings.Join(p.Platforms, ", "))
			}
		}
		for _, pl := range p.Platforms {
			if _, ok := vals[pl]; !ok {
				d.ErrAt(pos, "build_args.%s: no value for %s (the pins build %s: give one value per platform)", k, pl, strings.Join(p.Platforms, ", "))
			}
		}
	}
}

// buildPlatforms is what a build makes: the option's platforms, each one
// of the pins', or else every platform of the pins.
func buildPlatforms(p *Pins, want []string) ([]string, error) {
	if len(want) == 0 {
		return p.Platforms, nil
	}
	for _, pl := range want {
		if !slices.Contains(p.Platforms, pl) {
			return nil, fmt.Errorf("%s: --platform %s is not among the pins' platforms (%s): add it to platforms, with its build arguments", p.File, pl, strings.Join(p.Platforms, ", "))
		}
	}
	return want, nil
}

// argsFor are the build arguments one platform's build uses: the shared
// ones and that platform's value of each per-platform one, by its own
// name; what its source-revisions.json records.
func (r *Resolved) argsFor(platform string) map[string]string {
	out := maps.Clone(r.BuildArgs)
	if out == nil {
		out = map[string]string{}
	}
	if r.Pins == nil {
		return out
	}
	for k, vals := range r.Pins.PlatformArgs {
		out[k] = vals[platform]
	}
	return out
}

// platformAttrs sets the frontend attributes of a multi-platform build:
// the platforms, and each per-platform build argument under its
// PlatformArg name for every platform (and under its own name when one
// platform is built, so a Dockerfile for one platform builds as before).
func platformAttrs(attrs map[string]string, r *Resolved) {
	attrs["platform"] = strings.Join(r.Platforms, ",")
	for k, vals := range r.Pins.PlatformArgs {
		for _, pl := range r.Platforms {
			attrs["build-arg:"+PlatformArg(k, pl)] = vals[pl]
		}
		if len(r.Platforms) == 1 {
			attrs["build-arg:"+k] = vals[r.Platforms[0]]
		}
	}
}

// ProvenanceContext is the named context a platform's
// source-revisions.json is read from: BuildKit takes "NAME::PLATFORM"
// before "NAME" for a stage built for PLATFORM, so the Dockerfile's one
// COPY --from=provenance copies each platform's own record.
func ProvenanceContext(platform string) string {
	return "provenance-" + strings.ReplaceAll(platform, "/", "-")
}

// platformRevisions is what each platform's image records: the same
// pins, that platform's build arguments, and the platform.
func platformRevisions(r *Resolved, rv provenance.SourceRevisions) map[string]provenance.SourceRevisions {
	out := map[string]provenance.SourceRevisions{}
	for _, pl := range r.Platforms {
		p := rv
		p.Platform = pl
		p.BuildArgs = r.argsFor(pl)
		if len(p.BuildArgs) == 0 {
			p.BuildArgs = nil
		}
		out[pl] = p
	}
	return out
}

// download is a RUN that downloads: its line and shell text.
type download struct {
	line int
	text string
}

// appendDownload adds a RUN whose text runs curl or wget.
func appendDownload(ds []download, line int, text string) []download {
	for _, cmd := range shellCommands(text) {
		if len(cmd) > 0 && (cmd[0] == "curl" || cmd[0] == "wget") {
			return append(ds, download{line, text})
		}
	}
	return ds
}

// undeclared is the ARG a pinned build argument k needs that the
// Dockerfile does not declare ("" when none): k itself, or, for a value
// per platform in a build of several, k_ARCH of each platform.
func undeclared(r *Resolved, k string, args map[string]bool) string {
	if _, per := r.Pins.PlatformArgs[k]; per && len(r.Platforms) > 1 {
		for _, pl := range r.Platforms {
			if a := PlatformArg(k, pl); !args[a] {
				return a
			}
		}
		return ""
	}
	if !args[k] {
		return k
	}
	return ""
}

// checkPlatforms holds a build of several platforms to one download per
// platform: a checksum given once (one platform's file) is a finding at
// the pins, and a download whose RUN does not choose by TARGETARCH is one
// at the Dockerfile, since every platform but one would fetch another
// platform's file, or check its own against another's SHA-256.
func checkPlatforms(r *Resolved, name string, facts dockerfileFacts) []Finding {
	if len(r.Platforms) < 2 {
		return nil
	}
	var out []Finding
	all := strings.Join(r.Platforms, " and ")
	for _, k := range r.Pins.ArgKeys {
		if _, one := r.BuildArgs[k]; one && (strings.Contains(k, "SHA256") || strings.Contains(k, "SHA512")) {
			out = append(out, Finding{File: r.Pins.File, Line: r.Pins.argLines[k], Rule: RuleDownloadOneArch,
				Message: fmt.Sprintf("build_args.%s: one checksum for %s: a download checked by one platform's SHA-256 is unchecked for the other; give one per platform ({%s: ..., %s: ...})", k, all, r.Platforms[0], r.Platforms[1])})
		}
	}
	for _, d := range facts.downloads {
		if !strings.Contains(d.text, "TARGETARCH") && !strings.Contains(d.text, "TARGETPLATFORM") {
			out = append(out, Finding{File: name, Line: d.line, Rule: RuleDownloadOneArch,
				Message: fmt.Sprintf("this RUN downloads the same file for %s: choose the file and its SHA-256 by ${TARGETARCH} (a build argument with one value per platform reaches the build as NAME_%s, NAME_%s)", all, strings.ToUpper(Arch(r.Platforms[0])), strings.ToUpper(Arch(r.Platforms[1])))})
		}
	}
	return out
}

// baseHasPlatforms refuses a base that has no image for a platform the
// build makes, before anything is built: an index without that platform's
// entry, or a plain image of another platform (BuildKit would build on it
// anyway, and the image would not run where it is meant to). Variants are
// not compared: BuildKit takes linux/arm64/v8 for linux/arm64.
func baseHasPlatforms(ref name.Digest, mt types.MediaType, platforms []string, ropts []remote.Option) error {
	var have []string
	if mt.IsIndex() {
		idx, err := remote.Index(ref, ropts...)
		if err != nil {
			return fmt.Errorf("reading the index %s: %v", ref.DigestStr(), shortErr(err))
		}
		m, err := idx.IndexManifest()
		if err != nil {
			return fmt.Errorf("reading the index %s: %v", ref.DigestStr(), shortErr(err))
		}
		for _, d := range m.Manifests {
			// Attestations are entries of platform unknown/unknown; an
			// entry without a platform (a nested index) says nothing.
			if d.Platform != nil && d.Platform.OS != "unknown" {
				have = append(have, d.Platform.OS+"/"+d.Platform.Architecture)
			}
		}
	} else {
		img, err := remote.Image(ref, ropts...)
		if err != nil {
			return fmt.Errorf("reading the image %s: %v", ref.DigestStr(), shortErr(err))
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return fmt.Errorf("reading the image %s: %v", ref.DigestStr(), shortErr(err))
		}
		if cf.OS == "" || cf.Architecture == "" {
			return nil // says nothing of its platform
		}
		have = []string{cf.OS + "/" + cf.Architecture}
	}
	var missing []string
	for _, pl := range platforms {
		if !slices.Contains(have, pl) {
			missing = append(missing, pl)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	kind := "index"
	if !mt.IsIndex() {
		kind = "image"
	}
	return fmt.Errorf("the %s %s@%s has no %s image (it has %s) and this build makes %s: pin a base with an image for each platform, or build fewer platforms",
		kind, ref.Context().Name(), ref.DigestStr(), strings.Join(missing, " or "), orNone(have), strings.Join(platforms, " and "))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(slices.Compact(slices.Sorted(slices.Values(s))), ", ")
}
