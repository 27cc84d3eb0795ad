package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
)

// env is what scripts/buildkit-env.sh started, plus the fixtures made here.
type env struct {
	addr, registry, registryRO, buildkitd string
	gitBase, gitURL                       string // git daemon on loopback
	base                                  string // busybox image, NAME:TAG@sha256:...
}

var fix *env

// gitDaemon is the git daemon the fixtures share, stopped (with the
// children it forked per connection) when the tests end.
var gitDaemon *exec.Cmd

func TestMain(m *testing.M) {
	code := m.Run()
	if gitDaemon != nil {
		_ = syscall.Kill(-gitDaemon.Process.Pid, syscall.SIGKILL)
		_ = gitDaemon.Wait()
	}
	if fix != nil && fix.gitBase != "" {
		os.RemoveAll(fix.gitBase)
	}
	os.Exit(code)
}

// setup returns the environment; the components are required (the README
// test command starts them), except with -short.
func setup(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("needs buildkitd and a registry (scripts/buildkit-env.sh); not with -short")
	}
	if fix != nil {
		return fix
	}
	e := &env{addr: os.Getenv("KVSWEEP_BUILDKIT_ADDR"), registry: os.Getenv("KVSWEEP_REGISTRY"),
		registryRO: os.Getenv("KVSWEEP_REGISTRY_RO"), buildkitd: os.Getenv("KVSWEEP_BUILDKITD")}
	if e.addr == "" || e.registry == "" {
		t.Fatal("KVSWEEP_BUILDKIT_ADDR and KVSWEEP_REGISTRY are not set: scripts/buildkit-env.sh start; eval \"$(scripts/buildkit-env.sh env)\" (the README's test command does both)")
	}
	var err error
	if e.gitBase, err = os.MkdirTemp("", "kvsweep-git-repos-"); err != nil {
		t.Fatal(err)
	}
	e.gitURL = startGitDaemon(t, e.gitBase)
	e.base = pushBusybox(t, e.registry+"/test/busybox:1")
	fix = e
	return e
}

// startGitDaemon serves base over git:// on a free loopback port.
func startGitDaemon(t *testing.T, base string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("git", "daemon", "--base-path="+base, "--export-all", "--reuseaddr",
		"--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), base)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	gitDaemon = cmd
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return fmt.Sprintf("git://127.0.0.1:%d", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("git daemon did not start")
	return ""
}

// repo makes a git repository with one commit per file set, tags and a
// branch, and returns its commits in order.
func (e *env) repo(t *testing.T, name string, files ...map[string]string) []string {
	t.Helper()
	dir := filepath.Join(e.gitBase, name+".git")
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

// pushBusybox makes a one-layer image with busybox-static and its applets
// (no image can be pulled here) and pushes it; returns NAME:TAG@DIGEST.
func pushBusybox(t *testing.T, ref string) string { return pushVariant(t, ref, "") }

// pushVariant is pushBusybox with a file /variant holding variant, so a
// different variant is a different image.
func pushVariant(t *testing.T, ref, variant string) string {
	t.Helper()
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("busybox-static is needed for the base image: %v", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, d := range []string{"bin/", "tmp/", "opt/"} {
		_ = tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: epoch})
	}
	_ = tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb)), ModTime: epoch})
	_, _ = tw.Write(bb)
	for _, applet := range []string{"sh", "grep", "cat", "test", "cp", "mkdir", "ls", "echo", "true", "false", "rm", "mv", "sleep"} {
		_ = tw.WriteHeader(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", ModTime: epoch})
	}
	if variant != "" {
		_ = tw.WriteHeader(&tar.Header{Name: "variant", Mode: 0o644, Size: int64(len(variant)), ModTime: epoch})
		_, _ = tw.Write([]byte(variant))
	}
	_ = tw.Close()
	layer, err := tarball.LayerFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{Architecture: "amd64", OS: "linux",
		Config: v1.Config{Env: []string{"PATH=/bin"}}, RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		t.Fatal(err)
	}
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

// checkout makes a local KVCR checkout with one commit.
func checkout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
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
