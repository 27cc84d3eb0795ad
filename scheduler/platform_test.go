package scheduler

import (
	"fmt"
	"strings"
	"testing"
)

// Nodes that say nothing of their platform are left out and counted;
// none that says anything is refused; a long list of nodes is cut.
func TestOnePlatform(t *testing.T) {
	nodes := []NodePlatform{{Node: "n0"}}
	for i := 1; i <= 6; i++ {
		nodes = append(nodes, NodePlatform{Node: fmt.Sprintf("n%d", i), Platform: MachinePlatform("aarch64"), From: "Arch=aarch64"})
	}
	plat, src, err := OnePlatform("partition p", nodes)
	if want := "Arch=aarch64 of n1, n2, n3, n4 and 2 more; 1 node(s) say nothing: n0"; err != nil || plat != "linux/arm64" || src != want {
		t.Errorf("got %q %q %v, want linux/arm64 %q", plat, src, err, want)
	}
	_, _, err = OnePlatform("partition p", nodes[:1])
	if err == nil || !strings.Contains(err.Error(), "partition p: no node says its platform (no Arch, no feature naming one: n0): set cluster.platform") {
		t.Errorf("no node says: %v", err)
	}
	for m, want := range map[string]string{"x86_64": "linux/amd64", "amd64": "linux/amd64", "arm64": "linux/arm64", "ppc64le": "linux/ppc64le"} {
		if got := MachinePlatform(m); got != want {
			t.Errorf("MachinePlatform(%q) = %q, want %q", m, got, want)
		}
	}
}
