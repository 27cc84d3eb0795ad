package imagebuild

import (
	"os"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/imagetest"
)

// env is what scripts/buildkit-env.sh started, plus the fixtures made here.
type env struct {
	addr, registry, registryRO, buildkitd string
	gitBase, gitURL                       string // git daemon on loopback
	git                                   *imagetest.GitServer
	base                                  string // busybox image, NAME:TAG@sha256:...
}

var fix *env

// TestMain stops the git daemon the fixtures share (with the children it
// forked per connection) when the tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if fix != nil && fix.git != nil {
		fix.git.Stop()
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
	e.git = imagetest.StartGitServer(t)
	e.gitBase, e.gitURL = e.git.Base, e.git.URL
	e.base = pushBusybox(t, e.registry+"/test/busybox:1")
	fix = e
	return e
}

// pushBusybox pushes the busybox base image to ref; NAME:TAG@DIGEST.
func pushBusybox(t *testing.T, ref string) string { return imagetest.PushBase(t, ref, "") }

// pushVariant is pushBusybox with a different /variant: another image.
func pushVariant(t *testing.T, ref, variant string) string {
	return imagetest.PushBase(t, ref, variant)
}

// repo makes a repository served by the fixtures' git daemon.
func (e *env) repo(t *testing.T, name string, files ...map[string]string) []string {
	return e.git.Repo(t, name, files...)
}

// checkout makes a local KVCR checkout with one commit.
func checkout(t *testing.T) string { return imagetest.Checkout(t, nil) }
