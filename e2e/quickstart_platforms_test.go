package e2e

import (
	"archive/tar"
	"cmp"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kvsweep/kvsweep/imagebuild"
	"github.com/kvsweep/kvsweep/internal/testing/imagetest"
)

// The shipped quick-start Dockerfile built for linux/amd64 and
// linux/arm64 in one index, as a site with GH200 and x86-64 partitions
// builds it: the vLLM stand-in base an index of Debian for both, every
// download (rustup-init and the toolchain it installs, protoc, etcd, NATS)
// served per platform from Debian's packages of that architecture and
// checked by that platform's SHA-256, the arm64 steps (cargo compiling
// Dynamo's Rust extension, pip, the canary) under QEMU. Each platform's
// image passes its canary; two builds, the second on a fresh buildkitd,
// give each platform one digest, and a build of either platform alone
// gives that platform's digest too; image verify passes
// per platform; each record names its platform and the same commits; and
// the programs and the compiled extension in each image are of its
// architecture.
func TestQuickStartTwoPlatforms(t *testing.T) {
	c := clusters(t)[0]
	qs, pins, adapter := quickStartTwoPlatforms(t, c)
	reg, addr := os.Getenv("KVSWEEP_REGISTRY"), os.Getenv("KVSWEEP_BUILDKIT_ADDR")
	if out := mustKvsweep(t, c, "image", "build", "--check", "--pins", pins, "--insecure-registry", "--buildkit-addr", addr); !strings.Contains(out, "no findings") {
		t.Errorf("image build --check of the shipped Dockerfile for two platforms:\n%s", out)
	}

	ref := reg + "/qs2/kvcr:1"
	var builds []map[string]string
	// The second build runs on a fresh buildkitd, as another machine
	// would: nothing of the first is reused.
	for i, push := range []string{ref, reg + "/qs2/kvcr:again"} {
		builder := addr
		if i == 1 {
			builder, _ = imagetest.StartBuildkitd(t, os.Getenv("KVSWEEP_BUILDKITD"), reg)
		}
		start := time.Now()
		out, errs, err := kvsweep(t, c, nil, "image", "build", "--pins", pins, "--push", push, "--insecure-registry",
			"--buildkit-addr", builder, "--progress", "plain", "--media-types", "docker")
		if err != nil {
			t.Fatalf("building the shipped Dockerfile for linux/amd64 and linux/arm64: %v\n%s%s", err, out, lastLines(errs, 60))
		}
		t.Logf("image build of the quick-start Dockerfile for linux/amd64 and linux/arm64 (arm64 under QEMU), build %d: %s", i+1, time.Since(start).Round(time.Second))
		// The canary ran for each platform: two lines of each of its
		// answers.
		for _, want := range []string{"vllm 0.20.1", "kv connector vllm.distributed.kv_transfer.kv_connector.v1.kvcr_connector.KVCRConnector"} {
			if n := strings.Count(errs, want); n < 2 {
				t.Errorf("build %d: the canary printed %q %d times, want once per platform:\n%s", i+1, want, n, lastLines(errs, 60))
			}
		}
		digests := map[string]string{}
		for _, m := range regexp.MustCompile(`(?m)^(linux/(?:amd64|arm64)) (sha256:[0-9a-f]{64})$`).FindAllStringSubmatch(out, -1) {
			digests[m[1]] = m[2]
		}
		if len(digests) != 2 {
			t.Fatalf("image build printed %d platforms' digests, want 2:\n%s", len(digests), out)
		}
		builds = append(builds, digests)
	}
	for _, pl := range []string{"linux/amd64", "linux/arm64"} {
		if builds[0][pl] != builds[1][pl] {
			t.Errorf("%s: two builders given the same pins built %s and %s", pl, builds[0][pl], builds[1][pl])
		}
	}

	// Each platform alone from the same pins is the index's image of that
	// platform, byte for byte: what a native builder of each would make.
	for _, pl := range []string{"linux/amd64", "linux/arm64"} {
		out := mustKvsweep(t, c, "image", "build", "--pins", pins, "--platform", pl, "--push", reg+"/qs2/kvcr:"+imagebuild.Arch(pl),
			"--insecure-registry", "--buildkit-addr", addr, "--progress", "quiet", "--media-types", "docker")
		if !strings.Contains(out, "digest "+builds[0][pl]) {
			t.Errorf("%s alone from the same pins, want the index's %s image %s:\n%s", pl, pl, builds[0][pl], out)
		}
	}
	out := mustKvsweep(t, c, "image", "verify", ref, "--pins", pins, "--insecure-registry")
	for _, pl := range []string{"linux/amd64", "linux/arm64"} {
		if !strings.Contains(out, ref+" "+pl+" matches "+pins) {
			t.Errorf("image verify does not pass %s:\n%s", pl, out)
		}
	}
	var images []imagebuild.Inspection
	js := mustKvsweep(t, c, "image", "inspect", ref, "--insecure-registry", "--format", "json")
	if err := json.Unmarshal([]byte(js), &images); err != nil || len(images) != 2 {
		t.Fatalf("image inspect of the index: %v, %d images\n%s", err, len(images), js)
	}
	for _, in := range images {
		rv := in.Revisions
		if rv == nil || rv.Platform != in.Platform || in.Digest != builds[0][in.Platform] {
			t.Errorf("image inspect: the %s image %s records %+v", in.Platform, in.Digest, rv)
			continue
		}
		if rv.Commit("dynamo") != qs.dynamo[0] || rv.Commit("vllm_adapter") != adapter[0] {
			t.Errorf("the %s image records %s, want dynamo %s and vllm_adapter %s", in.Platform, rv.Short(), qs.dynamo[0], adapter[0])
		}
	}
	// What each platform's image holds was made for it: the downloads of
	// its architecture and the Rust extension compiled for it.
	for pl, machine := range map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64} {
		got := imageELFs(t, ref+"@"+builds[0][pl], "usr/local/bin/etcd", "usr/local/bin/nats-server", "dist-packages/dynamo/_core.so")
		for _, f := range []string{"usr/local/bin/etcd", "usr/local/bin/nats-server", "dist-packages/dynamo/_core.so"} {
			if got[f] != machine {
				t.Errorf("the %s image's %s is for %v, want %v", pl, f, got[f], machine)
			}
		}
	}
}

// imageELFs reads the image at ref (by digest) from the registry and
// returns the ELF machine of each file whose path ends with one of
// suffixes.
func imageELFs(t *testing.T, ref string, suffixes ...string) map[string]elf.Machine {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatalf("reading %s: %v", ref, err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	got := map[string]elf.Machine{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatalf("reading %s's files: %v", ref, err)
		}
		for _, s := range suffixes {
			if h.Typeflag != tar.TypeReg || !strings.HasSuffix(h.Name, s) {
				continue
			}
			// A 64-bit little-endian ELF header: e_machine at byte 18.
			head := make([]byte, 20)
			if _, err := io.ReadFull(tr, head); err != nil || string(head[:4]) != elf.ELFMAG {
				t.Fatalf("%s in %s is not an ELF file (%v): % x", h.Name, ref, err, head)
			}
			got[s] = elf.Machine(uint16(head[18]) | uint16(head[19])<<8)
		}
	}
}

// quickStartTwoPlatforms serves the quick-start stand-ins for linux/amd64
// and linux/arm64, pushes the vLLM stand-in base as an index of the two,
// and writes pins for both platforms; it returns the stand-ins, the pins
// file and the adapter's commits.
func quickStartTwoPlatforms(t testing.TB, c cluster) (quickStartInputs, string, []string) {
	t.Helper()
	reg, addr := os.Getenv("KVSWEEP_REGISTRY"), os.Getenv("KVSWEEP_BUILDKIT_ADDR")
	qsBase, qsBaseARM64, tools := os.Getenv("KVSWEEP_QS_BASE"), os.Getenv("KVSWEEP_QS_BASE_ARM64"), os.Getenv("KVSWEEP_QS_TOOLS_ARM64")
	if reg == "" || addr == "" || qsBase == "" || qsBaseARM64 == "" || tools == "" {
		t.Fatal("the registry, buildkitd and the amd64 and arm64 stand-ins are not set up: scripts/buildkit-env.sh install, start and env (the README's test command)")
	}
	qs := quickStartSources(t, tools)
	adapter := qs.git.Repo(t, "adapter", map[string]string{
		"vllm/distributed/kv_transfer/kv_connector/v1/kvcr_connector.py": "class KVCRConnector:\n    pass\n"})
	base := imagetest.PushRootfsIndex(t, reg+"/qs2/vllm-standin:0.20.1",
		map[string]string{"linux/amd64": qsBase, "linux/arm64": qsBaseARM64}, quickStartVLLM, imagetest.Entrypoint("vllm", "serve"))
	args := regexp.MustCompile(`(?m)^  RUST_VERSION: .*\n`).ReplaceAll(qs.args, nil)
	pins := filepath.Join(qs.tmp, "pins.yaml")
	src := fmt.Sprintf(`version: 1
platforms: [linux/amd64, linux/arm64]
base: %s
dynamo: {repo: %s/dynamo.git, ref: v0}
vllm_adapter: {repo: %s/adapter.git, ref: v0}
kvcr: {path: %s}
%s`, base, qs.git.URL, qs.git.URL, qs.kvcr, qs.inputs(args))
	if err := os.WriteFile(pins, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return qs, pins, adapter
}

// BenchmarkQuickStartPlatforms times kvsweep image build of the shipped
// quick-start Dockerfile from the stand-ins of TestQuickStartTwoPlatforms,
// each build on a fresh buildkitd (a cold cache): linux/amd64 alone, and
// linux/amd64 with linux/arm64 (its RUN steps under QEMU).
// bench/quickstart-platforms.sh runs it and prints the medians and their
// ratio.
func BenchmarkQuickStartPlatforms(b *testing.B) {
	c := clusters(b)[0]
	_, pins, _ := quickStartTwoPlatforms(b, c)
	reg := os.Getenv("KVSWEEP_REGISTRY")
	for _, pl := range []string{"linux/amd64", "linux/amd64,linux/arm64"} {
		b.Run(strings.ReplaceAll(pl, "/", "-"), func(b *testing.B) {
			for i := range b.N {
				b.StopTimer()
				addr, stop := imagetest.StartBuildkitd(b, os.Getenv("KVSWEEP_BUILDKITD"), reg)
				b.StartTimer()
				out, errs, err := kvsweep(b, c, nil, "image", "build", "--pins", pins, "--platform", pl, "--push", fmt.Sprintf("%s/qs2/bench:%d", reg, i),
					"--insecure-registry", "--buildkit-addr", addr, "--progress", "plain")
				b.StopTimer()
				if err != nil {
					b.Fatalf("image build --platform %s: %v\n%s%s", pl, err, out, lastLines(errs, 40))
				}
				for arch, secs := range stepSeconds(errs, "maturin build") {
					b.ReportMetric(secs, "s-maturin-"+arch)
				}
				stop()
			}
		})
	}
}

// stepSeconds reads BuildKit's plain progress for the steps whose command
// contains cmd and returns each platform's time ("amd64", "arm64": of
// "[linux/arm64 stage n/m]"; "amd64" when one platform is built and the
// step names none).
func stepSeconds(progress, cmd string) map[string]float64 {
	arch := map[string]string{} // step number -> architecture
	out := map[string]float64{}
	head := regexp.MustCompile(`^(#\d+) \[(?:linux/(\w+) )?[^\]]*\] RUN `)
	done := regexp.MustCompile(`^(#\d+) DONE ([0-9.]+)s$`)
	for _, line := range strings.Split(progress, "\n") {
		if m := head.FindStringSubmatch(line); m != nil && strings.Contains(line, cmd) {
			arch[m[1]] = cmp.Or(m[2], "amd64")
		} else if m := done.FindStringSubmatch(line); m != nil && arch[m[1]] != "" {
			secs, _ := strconv.ParseFloat(m[2], 64)
			out[arch[m[1]]] = secs
		}
	}
	return out
}
