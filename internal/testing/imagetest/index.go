package imagetest

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// PushIndex pushes to ref an index of two images, made without a
// builder: the busybox base of each platform (this host's busybox for
// linux/amd64, busyboxARM64 for linux/arm64) with the files of that
// platform added (slash-separated path -> content, executable). It
// returns each platform's image digest.
func PushIndex(t testing.TB, ref, busyboxARM64 string, files func(platform string) map[string]string) map[string]string {
	t.Helper()
	digests := map[string]string{}
	var adds []mutate.IndexAddendum
	for _, p := range []struct{ arch, bb string }{{"amd64", "/bin/busybox"}, {"arm64", busyboxARM64}} {
		img, err := mutate.AppendLayers(baseImage(t, p.bb, p.arch, ""), filesLayer(t, files("linux/"+p.arch)))
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests["linux/"+p.arch] = d.String()
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: p.arch}}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(context.Background())); err != nil {
		t.Fatalf("pushing the index: %v", err)
	}
	return digests
}

// filesLayer is a layer of the given files, each executable, with their
// directories.
func filesLayer(t testing.TB, files map[string]string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dirs := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		for i := range len(p) {
			if p[i] == '/' && !dirs[p[:i]] {
				dirs[p[:i]] = true
				_ = tw.WriteHeader(&tar.Header{Name: p[:i] + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch})
			}
		}
		_ = tw.WriteHeader(&tar.Header{Name: p, Mode: 0o755, Size: int64(len(files[p])), ModTime: epoch})
		_, _ = tw.Write([]byte(files[p]))
	}
	_ = tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	return layer
}
