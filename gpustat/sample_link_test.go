package gpustat

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A link where the samples go (left in the cell directory by a harness)
// is refused, and what it points to is left as it was.
func TestSampleFileRefusesALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "gpu.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := SampleFile(context.Background(), link, 0); err == nil {
		t.Error("sampled into a link")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("the link's target now holds %q", b)
	}
}
