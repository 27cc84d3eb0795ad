package imagebuild

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/testing/imagetest"
)

// A buildkitd address that accepts connections and never answers: the
// build fails within 10 s instead of hanging.
func TestBuildkitdSilent(t *testing.T) {
	e := setup(t)
	rp := e.repos(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	r := resolve(t, e.pins(t, "v0", rp.adapter[0], checkout(t), e.base), WithInsecureRegistry())
	start := time.Now()
	_, err = Build(context.Background(), r, WithAddr("tcp://"+l.Addr().String()), WithPush(e.registry+"/test/never:1"))
	d := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 10s") {
		t.Fatalf("got %v after %s", err, d)
	}
	if d > 12*time.Second {
		t.Errorf("took %s", d)
	}
}

// oci:, docker: and squashfs: outputs in one build; the first two inspect
// like the pushed image, the squashfs holds the image's root.
func TestOutputs(t *testing.T) {
	e := setup(t)
	rp := e.repos(t)
	r := resolve(t, e.pins(t, "v1", rp.adapter[0], checkout(t), e.base), WithInsecureRegistry())
	dir := t.TempDir()
	oci, docker, sqsh := filepath.Join(dir, "img.oci.tar"), filepath.Join(dir, "img.docker.tar"), filepath.Join(dir, "img.sqsh")
	if _, err := Build(context.Background(), r, WithAddr(e.addr), WithOutput("oci:"+oci), WithOutput("docker:"+docker), WithOutput("squashfs:"+sqsh)); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"oci:" + oci, "docker:" + docker} {
		in, err := Inspect(context.Background(), ref)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if got := in.Revisions.Components[Dynamo].Commit; got != rp.dynamo[1] {
			t.Errorf("%s: dynamo %s, want %s", ref, got, rp.dynamo[1])
		}
	}
	out, err := exec.Command("unsquashfs", "-l", sqsh).CombinedOutput()
	if err != nil {
		t.Fatalf("unsquashfs: %v %s", err, out)
	}
	for _, f := range []string{"squashfs-root/opt/kvcr-build/source-revisions.json", "squashfs-root/bin/busybox", "squashfs-root/opt/kvcr/kvcr.txt"} {
		if !strings.Contains(string(out), f+"\n") {
			t.Errorf("the squashfs lacks %s", f)
		}
	}
}

// The same pins on two fresh buildkitd roots give the same image digest.
func TestReproducible(t *testing.T) {
	e := setup(t)
	if e.buildkitd == "" {
		t.Fatal("KVSWEEP_BUILDKITD is not set (scripts/buildkit-env.sh env)")
	}
	rp := e.repos(t)
	kvcr := checkout(t)
	var digests []string
	for i := 0; i < 2; i++ {
		addr := startBuildkitd(t, e)
		r := resolve(t, e.pins(t, "v0", rp.adapter[0], kvcr, e.base), WithInsecureRegistry())
		res, err := Build(context.Background(), r, WithAddr(addr), WithPush(fmt.Sprintf("%s/test/repro:%d", e.registry, i)), WithInsecureRegistry())
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, res.Digest)
	}
	if digests[0] != digests[1] {
		t.Errorf("two fresh builders gave %s and %s", digests[0], digests[1])
	}
}

// startBuildkitd runs a buildkitd with a fresh root for the test.
func startBuildkitd(t *testing.T, e *env) string {
	t.Helper()
	addr, _ := imagetest.StartBuildkitd(t, e.buildkitd, e.registry)
	return addr
}
