package upstream_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/templates"
	"github.com/kvsweep/kvsweep/upstream"
)

// The quick-start Dockerfiles download each tool's file of the build's
// platform, named as its release names it (the facts of build-inputs cite
// each file and its SHA-256 per architecture), and check it against that
// platform's SHA-256 from the pins.
func TestDockerfileDownloadsPerPlatform(t *testing.T) {
	in, err := upstream.For("build-inputs", "2026-12")
	if err != nil {
		t.Fatal(err)
	}
	// The fact of each file and the arm of the Dockerfile's case that
	// picks it.
	for key, arm := range map[string]string{
		"protoc.sha256.linux-x86_64":              `amd64) arch=x86_64 sha=${PROTOC_SHA256_AMD64:-${PROTOC_SHA256}}`,
		"protoc.sha256.linux-aarch_64":            `arm64) arch=aarch_64 sha=${PROTOC_SHA256_ARM64:-${PROTOC_SHA256}}`,
		"rustup.sha256.x86_64-unknown-linux-gnu":  `amd64) arch=x86_64-unknown-linux-gnu sha=${RUSTUP_SHA256_AMD64:-${RUSTUP_SHA256}}`,
		"rustup.sha256.aarch64-unknown-linux-gnu": `arm64) arch=aarch64-unknown-linux-gnu sha=${RUSTUP_SHA256_ARM64:-${RUSTUP_SHA256}}`,
		"nats.sha256.linux-amd64":                 `amd64) arch=amd64 sha=${NATS_SHA256_AMD64:-${NATS_SHA256}}`,
		"nats.sha256.linux-arm64":                 `arm64) arch=arm64 sha=${NATS_SHA256_ARM64:-${NATS_SHA256}}`,
		"etcd.sha256.linux-amd64":                 `amd64) arch=amd64 sha=${ETCD_SHA256_AMD64:-${ETCD_SHA256}}`,
		"etcd.sha256.linux-arm64":                 `arm64) arch=arm64 sha=${ETCD_SHA256_ARM64:-${ETCD_SHA256}}`,
	} {
		f, ok := in.One(key)
		if !ok {
			t.Errorf("%s: no fact %s", in.File, key)
			continue
		}
		for name, df := range map[string][]byte{"Dockerfile.quick-start-vllm": templates.QuickStartDockerfile(), "Dockerfile.quick-start-sglang": templates.QuickStartSGLangDockerfile()} {
			if !strings.Contains(string(df), arm) {
				t.Errorf("templates/%s does not pick the file of %s by TARGETARCH (%q) [%s]", name, key, arm, in.Cite(f))
			}
		}
	}
}

// A site with Grace (aarch64) nodes builds the example pins for
// linux/arm64 too: every download the pins check by SHA-256 has that
// platform's SHA-256 among the facts, and the pinned vLLM release's image
// tag is an index that holds an arm64 image.
func TestExamplePinsHaveArm64Facts(t *testing.T) {
	in, err := upstream.For("build-inputs", "2026-12")
	if err != nil {
		t.Fatal(err)
	}
	c, p := checker(t)
	arm64 := map[string]string{
		"PROTOC_SHA256": "protoc.sha256.linux-aarch_64",
		"RUSTUP_SHA256": "rustup.sha256.aarch64-unknown-linux-gnu",
		"NATS_SHA256":   "nats.sha256.linux-arm64",
		"ETCD_SHA256":   "etcd.sha256.linux-arm64",
	}
	for arg := range p.BuildArgs {
		if !strings.HasSuffix(arg, "_SHA256") {
			continue
		}
		key, ok := arm64[arg]
		if !ok {
			t.Errorf("examples/pins.yaml: %s has no arm64 fact named here", arg)
			continue
		}
		if f, ok := in.One(key); !ok || len(f.Value()) != 64 {
			t.Errorf("%s: no SHA-256 fact %s for %s on linux/arm64", in.File, key, arg)
		}
	}
	f, ok := c.VLLM.One("image.platforms")
	if !ok || !slices.Contains(f.Values, "linux/arm64") {
		t.Errorf("%s: the image's platforms %v do not include linux/arm64", c.VLLM.File, f.Values)
	}
}
