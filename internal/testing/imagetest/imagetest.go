// Package imagetest makes what image tests need and cannot pull here: git
// repositories served over git:// on loopback, a KVCR checkout, and a
// busybox base image pushed to a test registry. Tests only.
package imagetest

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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

// GitServer is a git daemon serving the repositories under Base at URL.
type GitServer struct {
	Base, URL string
	cmd       *exec.Cmd
}

// StartGitServer serves a new directory over git:// on a free loopback
// port. Stop it (it is shared by tests, so the caller says when).
func StartGitServer(t testing.TB) *GitServer {
	t.Helper()
	base, err := os.MkdirTemp("", "kvsweep-git-repos-")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("git", "daemon", "--base-path="+base, "--export-all", "--reuseaddr",
		"--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), base)
	// A process group of its own: Stop ends the children it forks per
	// connection too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &GitServer{Base: base, URL: fmt.Sprintf("git://127.0.0.1:%d", port), cmd: cmd}
	for i := 0; i < 600; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return g
		}
		time.Sleep(50 * time.Millisecond)
	}
	g.Stop()
	t.Fatal("git daemon did not start")
	return nil
}

// Stop ends the daemon and its children and removes the repositories.
func (g *GitServer) Stop() {
	_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	_ = g.cmd.Wait()
	os.RemoveAll(g.Base)
}

// Repo makes a git repository NAME.git with one commit per file set, each
// tagged vN, and returns its commits in order.
func (g *GitServer) Repo(t testing.TB, name string, files ...map[string]string) []string {
	t.Helper()
	dir := filepath.Join(g.Base, name+".git")
	run := func(dir string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run(dir, "init", "--quiet", "-b", "main")
	var commits []string
	for i, fs := range files {
		for p, c := range fs {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run(dir, "add", "-A")
		// Fixed dates: the commit times set SOURCE_DATE_EPOCH.
		date := fmt.Sprintf("2026-11-%02dT12:00:00Z", i+1)
		cmd := exec.Command("git", "commit", "--quiet", "-m", fmt.Sprintf("commit %d", i))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@t", "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("commit: %v %s", err, out)
		}
		sha := run(dir, "rev-parse", "HEAD")
		run(dir, "tag", fmt.Sprintf("v%d", i))
		commits = append(commits, sha)
	}
	return commits
}

// PushBase makes a one-layer image with busybox-static and its applets (no
// image can be pulled here) and pushes it to ref; a non-empty variant goes
// into /variant, so a different variant is a different image. It returns
// NAME:TAG@DIGEST.
func PushBase(t testing.TB, ref, variant string) string {
	t.Helper()
	img := baseImage(t, "/bin/busybox", "amd64", variant)
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithContext(context.Background())); err != nil {
		t.Fatalf("pushing the base image: %v", err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref + "@" + d.String()
}

// PushBaseIndex pushes to ref an index of two busybox base images: this
// host's busybox for linux/amd64 and busyboxARM64 (an aarch64
// busybox-static) for linux/arm64, as a multi-platform base is published.
// It returns NAME:TAG@INDEX-DIGEST.
func PushBaseIndex(t testing.TB, ref, busyboxARM64 string) string {
	t.Helper()
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: baseImage(t, "/bin/busybox", "amd64", ""), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: baseImage(t, busyboxARM64, "arm64", ""), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(context.Background())); err != nil {
		t.Fatalf("pushing the base index: %v", err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref + "@" + d.String()
}

// baseImage is the one-layer busybox image of arch from the busybox
// binary at bb.
func baseImage(t testing.TB, bb, arch, variant string) v1.Image {
	t.Helper()
	bin, err := os.ReadFile(bb)
	if err != nil {
		t.Fatalf("busybox-static is needed for the base image: %v", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, d := range []string{"bin/", "tmp/", "opt/", "etc/", "proc/", "sys/", "dev/", "run/", "var/", "var/tmp/"} {
		_ = tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: epoch})
	}
	_ = tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin)), ModTime: epoch})
	_, _ = tw.Write(bin)
	for _, applet := range Applets {
		_ = tw.WriteHeader(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", ModTime: epoch})
	}
	if variant != "" {
		_ = tw.WriteHeader(&tar.Header{Name: "variant", Mode: 0o644, Size: int64(len(variant)), ModTime: epoch})
		_, _ = tw.Write([]byte(variant))
	}
	_ = tw.Close()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{Architecture: arch, OS: "linux",
		Config: v1.Config{Env: []string{"PATH=/bin"}}, RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		t.Fatal(err)
	}
	return img
}

// Applets are the busybox commands the base image has.
var Applets = []string{"sh", "grep", "cat", "test", "cp", "mkdir", "ls", "echo", "true", "false", "rm", "mv", "sleep",
	"printf", "tr", "sed", "head", "tail", "date", "hostname", "env", "id", "cut", "wc", "touch", "dirname", "basename", "kill", "ps"}

// Checkout makes a local KVCR checkout with one commit of kvcr.txt and
// the given files (slash-separated name -> content); names ending in .sh,
// and those listed in executable, are executable.
func Checkout(t testing.TB, files map[string]string, executable ...string) string {
	t.Helper()
	return CheckoutAt(t, t.TempDir(), files, executable...)
}

// CheckoutAt is Checkout in dir, which outlives the test (a fixture that
// several tests share).
func CheckoutAt(t testing.TB, dir string, files map[string]string, executable ...string) string {
	t.Helper()
	for p, c := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") || slices.Contains(executable, p) {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "--quiet", "-b", "main"}, {"add", "-A"}, {"commit", "--quiet", "-m", "kvcr"}} {
		if args[0] == "add" {
			if err := os.WriteFile(filepath.Join(dir, "kvcr.txt"), []byte("kvcr\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@t", "GIT_AUTHOR_DATE=2026-11-20T12:00:00Z", "GIT_COMMITTER_DATE=2026-11-20T12:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

// RootfsOption sets something of the image PushRootfs makes.
type RootfsOption func(*v1.Config)

// Entrypoint gives the image an ENTRYPOINT (the vLLM image's is its API
// server: vllm serve).
func Entrypoint(words ...string) RootfsOption {
	return func(c *v1.Config) { c.Entrypoint = words }
}

// PushRootfs pushes an image of two layers to ref: the root file system
// in the tarball at rootfs, then files (slash-separated path -> content,
// directories made as needed) over it; it returns NAME:TAG@DIGEST. The
// quick-start test's stand-in for the vLLM base image is made with it.
func PushRootfs(t testing.TB, ref, rootfs string, files map[string]string, opts ...RootfsOption) string {
	t.Helper()
	img := rootfsImage(t, "amd64", rootfs, files, opts)
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithContext(context.Background())); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref + "@" + d.String()
}

// PushRootfsIndex pushes to ref an index of PushRootfs's images, one per
// platform: rootfs maps a platform ("linux/arm64", "linux/arm64/v8", or
// "unknown/unknown" as attestations are listed) to that image's root file
// system tarball, and files go over each. It returns
// NAME:TAG@INDEX-DIGEST, as a multi-platform base (the vLLM image) is
// pinned.
func PushRootfsIndex(t testing.TB, ref string, rootfs map[string]string, files map[string]string, opts ...RootfsOption) string {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, platform := range slices.Sorted(maps.Keys(rootfs)) {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			t.Fatalf("PushRootfsIndex: platform %q: %v", platform, err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: rootfsImage(t, p.Architecture, rootfs[platform], files, opts),
			Descriptor: v1.Descriptor{Platform: p}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(context.Background())); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref + "@" + d.String()
}

// rootfsImage is the image of arch PushRootfs describes.
func rootfsImage(t testing.TB, arch, rootfs string, files map[string]string, opts []RootfsOption) v1.Image {
	t.Helper()
	base, err := tarball.LayerFromFile(rootfs)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dirs := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		for d := filepath.Dir(p); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		_ = tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch})
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		_ = tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(files[p])), ModTime: epoch})
		_, _ = tw.Write([]byte(files[p]))
	}
	_ = tw.Close()
	extra, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	cfg := v1.Config{Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}
	for _, o := range opts {
		o(&cfg)
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{Architecture: arch, OS: "linux",
		Config: cfg, RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, base, extra); err != nil {
		t.Fatal(err)
	}
	return img
}
