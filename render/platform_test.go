package render

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/matrix"
)

// runPlatform runs the job script's platform check, as rendered for the
// cluster c, on a node whose uname -m says machine (a stand-in on PATH).
// It returns the output, the cell directory and the exit error.
func runPlatform(t *testing.T, c matrix.Cluster, image, machine string) (string, string, error) {
	t.Helper()
	tmpl, err := loadTemplates("")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, "platform", ScriptData{Cluster: c, Image: image}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, cell := filepath.Join(dir, "bin"), filepath.Join(dir, "cell")
	for _, d := range []string{bin, cell} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "uname"), []byte("#!/bin/sh\necho "+machine+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "set -euo pipefail\nIMAGE=$1 NODE_NAME=gh200-01 CELL_DIR=$2\n" + b.String() + "\necho harness\n"
	cmd := exec.Command("bash", "-c", script, "platform", image, cell)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), cell, err
}

// An amd64 image staged for an arm64 node (GH200: aarch64) is refused
// before the harness, the refusal naming both platforms in the cell's
// platform-mismatch; the node of the image's platform runs it.
func TestPlatformRefusesOtherNode(t *testing.T) {
	img := "reg.example/kvcr:1@sha256:" + strings.Repeat("ab", 32)
	out, cell, err := runPlatform(t, matrix.Cluster{Platform: "linux/amd64"}, img, "aarch64")
	want := "the image " + img + " is linux/amd64, the node gh200-01 is linux/arm64 (aarch64)"
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 66 || strings.Contains(out, "harness\n") {
		t.Fatalf("an amd64 image on an aarch64 node: %v\n%s", err, out)
	}
	if !strings.Contains(out, "kvsweep: "+want+": the harness is not started") {
		t.Errorf("output:\n%s\nwant %q", out, want)
	}
	if b, _ := os.ReadFile(filepath.Join(cell, "platform-mismatch")); string(b) != want+"\n" {
		t.Errorf("platform-mismatch %q, want %q", b, want)
	}
	for _, c := range []struct{ platform, machine string }{{"linux/arm64", "aarch64"}, {"linux/amd64", "x86_64"}} {
		out, cell, err := runPlatform(t, matrix.Cluster{Platform: c.platform}, img, c.machine)
		if err != nil || out != "harness\n" {
			t.Errorf("%s on %s: %v\n%s", c.platform, c.machine, err, out)
		}
		if _, err := os.Stat(filepath.Join(cell, "platform-mismatch")); err == nil {
			t.Errorf("%s on %s: platform-mismatch written", c.platform, c.machine)
		}
	}
}

// Without cluster.platform the job checks nothing: the script has no
// check at all.
func TestPlatformUnset(t *testing.T) {
	out, _, err := runPlatform(t, matrix.Cluster{}, "reg.example/kvcr:1", "aarch64")
	if err != nil || out != "harness\n" {
		t.Errorf("no cluster.platform: %v\n%s", err, out)
	}
}
