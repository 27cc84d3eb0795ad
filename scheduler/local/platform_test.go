package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvsweep/kvsweep/scheduler"
)

// The local executor's node is this machine, of the platform uname -m
// says; what is not a machine name is refused, quoted.
func TestNodePlatforms(t *testing.T) {
	dir := t.TempDir()
	uname := filepath.Join(dir, "uname")
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	for _, c := range []struct{ machine, plat, err string }{
		{"aarch64", "linux/arm64", ""},
		{"x86_64", "linux/amd64", ""},
		{"x86 64", "", `uname -m printed "x86 64": expected a machine name (x86_64, aarch64)`},
	} {
		if err := os.WriteFile(uname, []byte("#!/bin/sh\necho '"+c.machine+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		nodes, err := New(Config{}).NodePlatforms(context.Background(), scheduler.PlatformQuery{})
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: %v, want %q", c.machine, err, c.err)
			}
			continue
		}
		if err != nil || len(nodes) != 1 || nodes[0].Platform != c.plat || nodes[0].From != "uname -m "+c.machine {
			t.Errorf("%q: %+v %v, want %s", c.machine, nodes, err, c.plat)
		}
	}
}
