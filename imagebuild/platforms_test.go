package imagebuild

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/imagetest"
	"github.com/kvsweep/kvsweep/provenance"
)

const twoPlatformPins = `version: 1
platforms: [linux/amd64, linux/arm64]
base: reg.example/base:1@sha256:` + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" + `
dynamo: {repo: https://example.com/dynamo.git, ref: v1.2.0}
vllm_adapter: {repo: https://example.com/vllm.git, ref: v0.20.1}
kvcr: {path: kvcr}
build_args:
  TOOL_VERSION: "1.0"
  TOOL_SHA256:
    linux/amd64: aaaa
    linux/arm64: bbbb
`

// A pins file gives its platforms and a value per platform for a
// download's SHA-256; each platform's record holds that platform's value
// under the argument's own name, and the build passes both by arch.
func TestPinsPlatforms(t *testing.T) {
	p, err := ParsePins("pins.yaml", []byte(twoPlatformPins))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Platforms, []string{PlatformAMD64, PlatformARM64}) {
		t.Fatalf("platforms %v", p.Platforms)
	}
	r := &Resolved{Pins: p, BuildArgs: p.BuildArgs, Revisions: map[string]Revision{KVCR: {Component: provenance.Component{Commit: strings.Repeat("a", 40)}}}}
	plan := MakePlan(r, "test", "")
	if got := plan.FrontendAttrs["platform"]; got != "linux/amd64,linux/arm64" {
		t.Errorf("platform attribute %q", got)
	}
	for k, want := range map[string]string{"build-arg:TOOL_SHA256_AMD64": "aaaa", "build-arg:TOOL_SHA256_ARM64": "bbbb", "build-arg:TOOL_VERSION": "1.0",
		"context:provenance::linux/arm64": "local:provenance-linux-arm64"} {
		if plan.FrontendAttrs[k] != want {
			t.Errorf("%s = %q, want %q", k, plan.FrontendAttrs[k], want)
		}
	}
	if _, ok := plan.FrontendAttrs["context:provenance"]; ok {
		t.Error("a build of two platforms has a plain provenance context: a stage of another platform would copy one platform's record")
	}
	arm := plan.Platforms[PlatformARM64]
	if arm.Platform != PlatformARM64 || arm.BuildArgs["TOOL_SHA256"] != "bbbb" || plan.Platforms[PlatformAMD64].BuildArgs["TOOL_SHA256"] != "aaaa" {
		t.Errorf("per-platform records: %+v", plan.Platforms)
	}
	// One platform of the two: the argument by its own name too.
	r.Platforms = []string{PlatformARM64}
	plan = MakePlan(r, "test", "")
	if plan.FrontendAttrs["build-arg:TOOL_SHA256"] != "bbbb" || plan.FrontendAttrs["context:provenance"] != "local:provenance-linux-arm64" {
		t.Errorf("one platform: %v", plan.FrontendAttrs)
	}
}

// Refused where they stand: an unknown platform, one listed twice, and a
// per-platform value missing for a platform or given for one not built.
func TestPinsPlatformsRefused(t *testing.T) {
	for _, c := range []struct{ edit, want string }{
		{"platforms: [linux/amd64, linux/arm64]|platforms: [linux/amd64, linux/s390x]", `pins.yaml:2:26: platforms: "linux/s390x" is not a platform kvsweep builds for (expected linux/amd64 or linux/arm64)`},
		{"platforms: [linux/amd64, linux/arm64]|platforms: [linux/arm64, linux/arm64]", "pins.yaml:2:26: platforms: linux/arm64 is listed twice"},
		{"    linux/arm64: bbbb\n|", "pins.yaml:9:3: build_args.TOOL_SHA256: no value for linux/arm64 (the pins build linux/amd64, linux/arm64: give one value per platform)"},
		{"platforms: [linux/amd64, linux/arm64]|platforms: [linux/amd64]", `pins.yaml:9:3: build_args.TOOL_SHA256: "linux/arm64" is not one of the pins' platforms (linux/amd64)`},
	} {
		from, to, _ := strings.Cut(c.edit, "|")
		_, err := ParsePins("pins.yaml", []byte(strings.Replace(twoPlatformPins, from, to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.edit, err, c.want)
		}
	}
	if _, err := ParsePlatforms("linux/amd64,linux/ppc64le"); err == nil || !strings.Contains(err.Error(), `platform "linux/ppc64le": expected linux/amd64 or linux/arm64`) {
		t.Errorf("--platform linux/ppc64le: %v", err)
	}
}

// A build of two platforms: a download checked by one SHA-256 for both,
// or one whose RUN fetches the same file for both, is a finding; a RUN
// that picks by TARGETARCH with a SHA-256 per platform is not.
func TestCheckDownloadOneArch(t *testing.T) {
	dir := t.TempDir()
	df := filepath.Join(dir, "Dockerfile")
	src := `ARG BASE_IMAGE=scratch
FROM ${BASE_IMAGE}
ARG TARGETARCH
ARG TOOL_VERSION
ARG TOOL_SHA256
ARG TOOL_SHA256_AMD64
ARG TOOL_SHA256_ARM64
RUN curl -fsSL -o /tmp/t "https://example.com/tool-${TOOL_VERSION}-linux-amd64" && echo "${TOOL_SHA256}  /tmp/t" | sha256sum -c -
RUN case "${TARGETARCH}" in amd64) s=${TOOL_SHA256_AMD64} ;; arm64) s=${TOOL_SHA256_ARM64} ;; esac \
 && curl -fsSL -o /tmp/t "https://example.com/tool-${TOOL_VERSION}-linux-${TARGETARCH}" && echo "$s  /tmp/t" | sha256sum -c -
`
	if err := os.WriteFile(df, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	pins := strings.Replace(twoPlatformPins, "  TOOL_VERSION: \"1.0\"\n", "  TOOL_VERSION: \"1.0\"\n  OTHER_SHA256: cccc\n", 1) + "dockerfile: " + df + "\n"
	p, err := ParsePins(filepath.Join(dir, "pins.yaml"), []byte(pins))
	if err != nil {
		t.Fatal(err)
	}
	r := &Resolved{Pins: p, BuildArgs: p.BuildArgs, Dockerfile: p.Dockerfile, Platforms: p.Platforms}
	fs, err := Check(r)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, fmt.Sprintf("%s:%d %s: %s", filepath.Base(f.File), f.Line, f.Rule, f.Message))
	}
	want := []string{
		"Dockerfile:8 download-one-arch: this RUN downloads the same file for linux/amd64 and linux/arm64: choose the file and its SHA-256 by ${TARGETARCH} (a build argument with one value per platform reaches the build as NAME_AMD64, NAME_ARM64)",
		"pins.yaml:9 arg-unused: build_args.OTHER_SHA256: Dockerfile declares no ARG OTHER_SHA256, so the value would not reach the build (and source-revisions.json would record what was not used)",
		"pins.yaml:9 download-one-arch: build_args.OTHER_SHA256: one checksum for linux/amd64 and linux/arm64: a download checked by one platform's SHA-256 is unchecked for the other; give one per platform ({linux/amd64: ..., linux/arm64: ...})",
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Built for one platform, the same Dockerfile and pins have no
	// platform findings.
	r.Platforms = []string{PlatformARM64}
	fs, _ = Check(r)
	for _, f := range fs {
		if f.Rule == RuleDownloadOneArch {
			t.Errorf("one platform: %v", f)
		}
	}
}

// The fixture built for linux/amd64 and linux/arm64 through buildkitd, the
// arm64 RUN steps under QEMU user emulation: one index of two images, each
// recording its own platform and its own base, verify passing per
// platform, and each platform's digest the same from a fresh builder.
func TestBuildTwoPlatforms(t *testing.T) {
	e := setup(t)
	bb := busyboxARM64(t)
	pins := e.twoPlatformPins(t, bb)
	var digests [2]map[string]string
	for i := range 2 {
		addr := e.addr
		if i == 1 {
			addr = startBuildkitd(t, e)
		}
		r := resolve(t, pins, WithInsecureRegistry())
		ref := fmt.Sprintf("%s/test/kvcr-multi:%d", e.registry, i)
		meta := filepath.Join(t.TempDir(), "build.json")
		start := time.Now()
		res, err := Build(context.Background(), r, WithAddr(addr), WithPush(ref), WithInsecureRegistry(), WithMetadataFile(meta), WithVersion("test"), WithProgress("plain", testWriter{t}))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("build %d of linux/amd64 and linux/arm64 (arm64 under QEMU): %s", i, time.Since(start).Round(100*time.Millisecond))
		digests[i] = checkTwoPlatforms(t, ref, r, res, meta)
	}
	for _, pl := range Platforms {
		if digests[0][pl] != digests[1][pl] {
			t.Errorf("%s: two fresh builders gave %s and %s", pl, digests[0][pl], digests[1][pl])
		}
	}
	// amd64 alone, on a fresh builder: the same image as the index's.
	r := resolve(t, pins, WithInsecureRegistry(), WithPlatforms([]string{PlatformAMD64}))
	start := time.Now()
	res, err := Build(context.Background(), r, WithAddr(startBuildkitd(t, e)), WithPush(e.registry+"/test/kvcr-multi:amd64"), WithInsecureRegistry(), WithVersion("test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("build of linux/amd64 alone on a fresh builder: %s", time.Since(start).Round(100*time.Millisecond))
	if res.Digest != digests[0][PlatformAMD64] {
		t.Errorf("linux/amd64 alone is %s, the index's linux/amd64 image %s", res.Digest, digests[0][PlatformAMD64])
	}
	// cluster.platform pins an index to its platform's image, and refuses
	// an image without one.
	ref := e.registry + "/test/kvcr-multi:0"
	if got, err := PinDigest(context.Background(), ref, WithInsecureRegistry(), WithPlatform(PlatformARM64)); err != nil || got != ref+"@"+digests[0][PlatformARM64] {
		t.Errorf("pinned for linux/arm64: %s %v, want the arm64 image %s", got, err, digests[0][PlatformARM64])
	}
	_, err = PinDigest(context.Background(), e.registry+"/test/kvcr-multi:amd64", WithInsecureRegistry(), WithPlatform(PlatformARM64))
	if err == nil || !strings.Contains(err.Error(), "has no linux/arm64 image (it has linux/amd64)") {
		t.Errorf("an amd64 image pinned for linux/arm64: %v", err)
	}
}

// checkTwoPlatforms checks an index built by TestBuildTwoPlatforms and
// returns each platform's digest.
func checkTwoPlatforms(t *testing.T, ref string, r *Resolved, res *Result, meta string) map[string]string {
	t.Helper()
	ins, err := InspectAll(context.Background(), ref, WithInsecureRegistry())
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]string{}
	var plats []string
	for _, in := range ins {
		plats = append(plats, in.Platform)
		digests[in.Platform] = in.Digest
		if in.Index != res.Digest {
			t.Errorf("%s: read from index %s, the build says %s", in.Platform, in.Index, res.Digest)
		}
		if in.Revisions.Platform != in.Platform {
			t.Errorf("the %s image records platform %q", in.Platform, in.Revisions.Platform)
		}
		if ms := Verify(in, r); len(ms) > 0 {
			t.Errorf("verify %s: %v", in.Platform, ms)
		}
	}
	if !slices.Equal(plats, Platforms) {
		t.Fatalf("the index holds %v, want %v", plats, Platforms)
	}
	arm, err := Inspect(context.Background(), ref, WithInsecureRegistry(), WithPlatform(PlatformARM64))
	if err != nil {
		t.Fatal(err)
	}
	if m := elfMachine(t, ref, PlatformARM64); m != elf.EM_AARCH64 {
		t.Errorf("the arm64 image's busybox is %v", m)
	}
	var md Result
	b, _ := os.ReadFile(meta)
	if err := json.Unmarshal(b, &md); err != nil || len(md.Platforms) != 2 || md.Platforms[1].Digest != arm.Digest || md.Platforms[1].Platform != PlatformARM64 {
		t.Errorf("metadata file lists %+v (%v), want both platforms with arm64 at %s", md.Platforms, err, arm.Digest)
	}
	return digests
}

// elfMachine is the machine of /bin/busybox in ref's image of platform.
func elfMachine(t *testing.T, ref, platform string) elf.Machine {
	t.Helper()
	imgs, _, cleanup, err := openImages(context.Background(), ref, true)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	im, err := pick(imgs, platform)
	if err != nil {
		t.Fatal(err)
	}
	b, err := readFile(im.img, "/bin/busybox")
	if err != nil {
		t.Fatal(err)
	}
	// The ELF header's e_machine (readFile reads the first MiB only).
	if len(b) < 20 || !bytes.HasPrefix(b, []byte(elf.ELFMAG)) {
		t.Fatalf("/bin/busybox of %s is not an ELF file", platform)
	}
	return elf.Machine(binary.LittleEndian.Uint16(b[18:20]))
}

// verify of an index names the platform of each mismatch: an image whose
// record names another platform than its manifest, an image of a
// platform the pins do not build, and a platform the pins build that the
// index lacks.
func TestVerifyAllPlatforms(t *testing.T) {
	rec := func(pl string) *provenance.SourceRevisions {
		return &provenance.SourceRevisions{Platform: pl, Components: map[string]provenance.Component{KVCR: {Commit: "c1"}}}
	}
	r := &Resolved{Platforms: []string{PlatformAMD64, PlatformARM64}, Revisions: map[string]Revision{KVCR: {Component: provenance.Component{Commit: "c1"}}}}
	ins := []*Inspection{{Platform: PlatformAMD64, Revisions: rec(PlatformAMD64)}, {Platform: PlatformARM64, Revisions: rec(PlatformARM64)}}
	if ms := VerifyAll(ins, r); len(ms) != 0 {
		t.Fatalf("a matching index: %v", ms)
	}
	ins[1].Revisions = rec(PlatformAMD64)
	var b strings.Builder
	err := WriteVerify(&b, "reg/kvcr:1", "pins.yaml", ins, r)
	want := "reg/kvcr:1 does not match pins.yaml:\n  linux/arm64 platform: the image has manifest linux/arm64, source-revisions.json linux/amd64, the pins resolve to linux/arm64"
	if err == nil || err.Error() != want {
		t.Errorf("record of another platform:\n%v\nwant\n%s", err, want)
	}
	err = WriteVerify(&b, "reg/kvcr:1", "pins.yaml", ins[:1], r)
	want = "reg/kvcr:1 does not match pins.yaml:\n  platform linux/arm64: the image has none, the pins resolve to linux/arm64"
	if err == nil || err.Error() != want {
		t.Errorf("index without arm64:\n%v\nwant\n%s", err, want)
	}
}

// The shipped quick-start Dockerfiles choose each download by TARGETARCH:
// built for both platforms with a SHA-256 per platform they have no
// platform findings; with one SHA-256 for both, each is a finding at the
// pins.
func TestQuickStartDockerfilesPerPlatform(t *testing.T) {
	per := `version: 1
engine: %s
platforms: [linux/amd64, linux/arm64]
base: reg.example/base:1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
dynamo: {repo: https://example.com/dynamo.git, ref: v1.2.0}
%skvcr: {path: kvcr}
build_args:
  RUSTUP_VERSION: "1.28.2"
  RUST_VERSION: "1.90.0"
  PROTOC_VERSION: "31.1"
  ETCD_VERSION: v3.5.21
  NATS_VERSION: "2.10.29"
`
	for _, engine := range Engines {
		adapter := ""
		if engine == EngineVLLM {
			adapter = "vllm_adapter: {repo: https://example.com/vllm.git, ref: v0.20.1}\n"
		}
		src := fmt.Sprintf(per, engine, adapter)
		for _, k := range []string{"RUSTUP_SHA256", "PROTOC_SHA256", "ETCD_SHA256", "NATS_SHA256"} {
			src += fmt.Sprintf("  %s: {linux/amd64: aaaa, linux/arm64: bbbb}\n", k)
		}
		if fs := platformFindings(t, src); len(fs) != 0 {
			t.Errorf("%s, a SHA-256 per platform: %v", engine, fs)
		}
		one := strings.ReplaceAll(src, "{linux/amd64: aaaa, linux/arm64: bbbb}", "aaaa")
		if fs := platformFindings(t, one); len(fs) != 4 || fs[0].Rule != RuleDownloadOneArch || fs[0].File != "pins.yaml" {
			t.Errorf("%s, one SHA-256 for both: %v, want 4 download-one-arch findings at the pins", engine, fs)
		}
	}
}

// platformFindings are the findings of the pins src but those about its
// Python lock (it names none).
func platformFindings(t *testing.T, src string) []Finding {
	t.Helper()
	p, err := ParsePins("pins.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := Check(&Resolved{Pins: p, BuildArgs: p.BuildArgs, Platforms: p.Platforms})
	if err != nil {
		t.Fatal(err)
	}
	var out []Finding
	for _, f := range fs {
		if f.Rule != RuleLockMissing {
			out = append(out, f)
		}
	}
	return out
}

func busyboxARM64(t *testing.T) string {
	bb := os.Getenv("KVSWEEP_BUSYBOX_ARM64")
	if bb == "" {
		t.Fatal("KVSWEEP_BUSYBOX_ARM64 is not set: scripts/buildkit-env.sh install; eval \"$(scripts/buildkit-env.sh env)\"")
	}
	return bb
}

// twoPlatformPins are the fixture's pins for linux/amd64 and linux/arm64
// on a busybox base index.
func (e *env) twoPlatformPins(t *testing.T, bb string) string {
	t.Helper()
	base := imagetest.PushBaseIndex(t, e.registry+"/test/busybox-multi:1", bb)
	rp := e.repos(t)
	pins := e.pins(t, "v0", rp.adapter[0], checkout(t), base)
	src, _ := os.ReadFile(pins)
	if err := os.WriteFile(pins, append([]byte("platforms: [linux/amd64, linux/arm64]\n"), src...), 0o644); err != nil {
		t.Fatal(err)
	}
	return pins
}

// image layer on an index keeps the index: a layered image per platform,
// each on that platform's image, recording its platform, the new KVCR
// commit and the image it was layered on.
func TestLayerTwoPlatforms(t *testing.T) {
	e := setup(t)
	r := resolve(t, e.twoPlatformPins(t, busyboxARM64(t)), WithInsecureRegistry())
	on := e.registry + "/test/kvcr-multi:layer-on"
	if _, err := Build(context.Background(), r, WithAddr(e.addr), WithPush(on), WithInsecureRegistry()); err != nil {
		t.Fatal(err)
	}
	under, err := InspectAll(context.Background(), on, WithInsecureRegistry())
	if err != nil {
		t.Fatal(err)
	}
	df := filepath.Join(t.TempDir(), "Dockerfile")
	layer := "ARG ON_IMAGE=scratch\nFROM ${ON_IMAGE}\nRUN rm -rf /opt/kvcr\nCOPY . /opt/kvcr\n" +
		"COPY --from=provenance source-revisions.json /opt/kvcr-build/source-revisions.json\nRUN grep -q '\"platform\"' /opt/kvcr-build/source-revisions.json\n"
	if err := os.WriteFile(df, []byte(layer), 0o644); err != nil {
		t.Fatal(err)
	}
	kvcr := imagetest.Checkout(t, map[string]string{"pr.txt": "a pull request\n"})
	p, err := PlanLayer(context.Background(), on, kvcr, df, WithInsecureRegistry(), WithVersion("test"))
	if err != nil {
		t.Fatal(err)
	}
	ref := e.registry + "/test/kvcr-multi:layered"
	if _, err := BuildLayer(context.Background(), p, WithAddr(e.addr), WithPush(ref), WithInsecureRegistry()); err != nil {
		t.Fatal(err)
	}
	ins, err := InspectAll(context.Background(), ref, WithInsecureRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 2 {
		t.Fatalf("the layered image has %d platforms, want 2", len(ins))
	}
	for i, in := range ins {
		rv := in.Revisions
		if in.Platform != under[i].Platform || rv.Platform != in.Platform || rv.LayeredOn == nil || rv.LayeredOn.Digest != under[i].Digest ||
			rv.Commit(KVCR) != p.Revisions.Commit(KVCR) || rv.Commit(KVCR) == under[i].Revisions.Commit(KVCR) {
			t.Errorf("%s: records platform %q, layered on %+v, kvcr %s; want its own platform on %s with the new kvcr commit",
				in.Platform, rv.Platform, rv.LayeredOn, rv.Commit(KVCR), under[i].Digest)
		}
	}
}

// A base without an image for a platform the pins build is refused at
// the pins' base line before anything is built, naming the platform
// missing and those it has: a plain image of another platform, and an
// index without that platform's entry. An index of both resolves.
func TestResolveBasePerPlatform(t *testing.T) {
	e := setup(t)
	rootfs := filepath.Join(t.TempDir(), "rootfs.tar")
	if err := os.WriteFile(rootfs, make([]byte, 1024), 0o644); err != nil { // an empty tar: two zero blocks
		t.Fatal(err)
	}
	plain := imagetest.PushBase(t, e.registry+"/test/base-amd64:1", "")
	// An attestation entry (unknown/unknown) is not a platform's image.
	amd64Index := imagetest.PushRootfsIndex(t, e.registry+"/test/base-amd64-index:1", map[string]string{PlatformAMD64: rootfs, "unknown/unknown": rootfs}, nil)
	rp := e.repos(t)
	for _, c := range []struct{ base, want string }{
		{plain, "has no linux/arm64 image (it has linux/amd64) and this build makes linux/amd64 and linux/arm64"},
		{amd64Index, "has no linux/arm64 image (it has linux/amd64) and this build makes linux/amd64 and linux/arm64"},
	} {
		pins := e.pins(t, "v0", rp.adapter[0], checkout(t), c.base)
		src, _ := os.ReadFile(pins)
		if err := os.WriteFile(pins, append([]byte("platforms: [linux/amd64, linux/arm64]\n"), src...), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := LoadPins(pins)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Resolve(context.Background(), p, WithInsecureRegistry())
		kind := "image"
		if c.base == amd64Index {
			kind = "index"
		}
		name, digest, _ := strings.Cut(c.base, "@")
		want := fmt.Sprintf("pins.yaml:3:7: base: the %s %s@%s %s", kind, name[:strings.LastIndex(name, ":")], digest, c.want)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("base %s:\n got %v\nwant %s", c.base, err, want)
		}
		// The same base builds linux/amd64 alone.
		if _, err := Resolve(context.Background(), p, WithInsecureRegistry(), WithPlatforms([]string{PlatformAMD64})); err != nil {
			t.Errorf("base %s for linux/amd64 alone: %v", c.base, err)
		}
	}
	resolve(t, e.twoPlatformPins(t, busyboxARM64(t)), WithInsecureRegistry())
	// As registries list arm64: with its variant, beside attestations.
	published := imagetest.PushRootfsIndex(t, e.registry+"/test/base-published:1",
		map[string]string{PlatformAMD64: rootfs, "linux/arm64/v8": rootfs, "unknown/unknown": rootfs}, nil)
	pins := e.pins(t, "v0", rp.adapter[0], checkout(t), published)
	src, _ := os.ReadFile(pins)
	if err := os.WriteFile(pins, append([]byte("platforms: [linux/amd64, linux/arm64]\n"), src...), 0o644); err != nil {
		t.Fatal(err)
	}
	resolve(t, pins, WithInsecureRegistry())
}
