package upstream_test

import (
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
