package imagebuild

import (
	"bytes"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/golden"

	"github.com/kvsweep/kvsweep/provenance"
)

// What kvsweep image inspect prints, for an image as kvsweep image build
// records it.
func TestInspectTextGolden(t *testing.T) {
	in := &Inspection{
		Ref:    "127.0.0.1:5055/kvcr/quick-start:v1",
		Digest: "sha256:2f1e0d9c8b7a69584736251403f2e1d0c9b8a79685746352413f2e1d0c9b8a7",
		Labels: map[string]string{
			"org.opencontainers.image.revision": "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d",
			"dev.kvsweep.dynamo.commit":         "5f3a1c09b2e4d7a8c6b5e4f3a2b1c0d9e8f7a6b5",
		},
		Revisions: &provenance.SourceRevisions{
			SchemaVersion: 1,
			Components: map[string]provenance.Component{
				Dynamo:      {Repo: "git://127.0.0.1/dynamo.git", Ref: "v0.6.0", Commit: "5f3a1c09b2e4d7a8c6b5e4f3a2b1c0d9e8f7a6b5"},
				VLLMAdapter: {Repo: "git://127.0.0.1/vllm.git", Ref: "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", Commit: "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"},
				KVCR:        {Commit: "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d", Dirty: true, DiffSHA256: "0123456789abcdef"},
			},
			Base:    provenance.Base{Name: "127.0.0.1:5055/base:v1", Digest: "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"},
			Builder: &provenance.Builder{Kvsweep: "v0.1.0", BuildKit: "v0.34.2"},
			Created: "2026-11-30T12:00:00Z",
		},
	}
	var b bytes.Buffer
	in.WriteText(&b)
	golden.Check(t, "testdata/inspect.golden", b.Bytes())
}
