package slurm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/scheduler"
)

// fakeNodeTools puts sinfo and scontrol on PATH that print the given
// files (captures of the real tools), and records sinfo's arguments.
func fakeNodeTools(t *testing.T, sinfo, scontrol string) string {
	t.Helper()
	dir := t.TempDir()
	args := filepath.Join(dir, "sinfo.args")
	for name, body := range map[string]string{
		"sinfo":    "#!/bin/sh\necho \"$@\" >" + args + "\ncat " + sinfo + "\n",
		"scontrol": "#!/bin/sh\ncat " + scontrol + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	return args
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The test cluster's real slurmd (22.05) reports Arch=x86_64 and no
// features: the default partition's two nodes are linux/amd64, read
// from their Arch.
func TestNodePlatformsRealCapture(t *testing.T) {
	args := fakeNodeTools(t, testdata(t, "sinfo-nodes.twonode.txt"), testdata(t, "scontrol-show-node.twonode.txt"))
	nodes, err := New(Config{}).NodePlatforms(context.Background(), scheduler.PlatformQuery{})
	if err != nil {
		t.Fatal(err)
	}
	plat, src, err := scheduler.OnePlatform("partition debug", nodes)
	if err != nil || plat != "linux/amd64" || src != "Arch=x86_64 of kvsn1, kvsn2" {
		t.Errorf("got %q %q %v, want linux/amd64 from Arch=x86_64 of kvsn1, kvsn2", plat, src, err)
	}
	if b, _ := os.ReadFile(args); strings.TrimSpace(string(b)) != "-N -h -o %N|%P|%f" {
		t.Errorf("sinfo %s, want no -p for the default partition", b)
	}
}

// A mixed cluster: the default partition (gpu*) is x86-64; partition
// grace has a node whose Arch is aarch64 and one whose slurmd said
// nothing but whose feature arm64 does (a site's own word over Arch);
// partition mixed has both platforms and is refused naming each's nodes,
// unless the constraint keeps one platform's nodes.
func TestNodePlatformsMixed(t *testing.T) {
	arch, err := parseNodeArch(mustRead(t, "scontrol-show-node.mixed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sinfo := string(mustRead(t, "sinfo-nodes.mixed.txt"))
	only := func(part string) []byte {
		var b strings.Builder
		for _, l := range strings.Split(sinfo, "\n") {
			if strings.Contains(l, "|"+part+"|") {
				b.WriteString(l + "\n")
			}
		}
		return []byte(b.String())
	}
	for _, c := range []struct {
		out                    []byte
		q                      scheduler.PlatformQuery
		plat, src, errContains string
	}{
		{[]byte(sinfo), scheduler.PlatformQuery{}, "linux/amd64", "Arch=x86_64 of h100-01", ""},
		{only("grace"), scheduler.PlatformQuery{Partition: "grace"}, "linux/arm64", "Arch=aarch64 of gh001; feature arm64 of gh002", ""},
		{only("mixed"), scheduler.PlatformQuery{Partition: "mixed"}, "", "",
			"P: its nodes are of 2 platforms: linux/amd64 (Arch=x86_64 of h100-01); linux/arm64 (Arch=aarch64 of gh001); set cluster.platform, or cluster.constraint to a feature of one platform's nodes"},
		{only("mixed"), scheduler.PlatformQuery{Partition: "mixed", Constraint: "gh200"}, "linux/arm64", "Arch=aarch64 of gh001", ""},
		{only("mixed"), scheduler.PlatformQuery{Partition: "mixed", Constraint: "gh200|grace"}, "", "", "2 platforms"},
		{nil, scheduler.PlatformQuery{Partition: "nosuch"}, "", "", "P has no nodes: set cluster.platform"},
	} {
		nf, err := parseNodeFeatures(c.out, c.q)
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := nodePlatforms(nf, arch)
		if err != nil {
			t.Fatal(err)
		}
		plat, src, err := scheduler.OnePlatform("P", nodes)
		if c.errContains != "" {
			if err == nil || !strings.Contains(err.Error(), c.errContains) {
				t.Errorf("%+v: %v, want %q", c.q, err, c.errContains)
			}
			continue
		}
		if err != nil || plat != c.plat || src != c.src {
			t.Errorf("%+v: %q %q %v, want %q %q", c.q, plat, src, err, c.plat, c.src)
		}
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(testdata(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// What a broken or hostile sinfo or scontrol prints is refused with its
// line and column, the value, and what was expected; a node whose
// features name two platforms is refused naming it.
func TestNodePlatformsHostile(t *testing.T) {
	for _, c := range []struct{ sinfo, scontrol, want string }{
		{"kvsn1 debug* (null)\n", "", `sinfo -N output:1:1: "kvsn1 debug* (null)": expected NODE|PARTITION|FEATURES`},
		{"ok|debug*|(null)\n../etc|debug*|(null)\n", "", `sinfo -N output:2:1: "../etc|debug*|(null)": expected NODE|PARTITION|FEATURES, a node name`},
		{"n1|debug*|gh200,a\x1bb\n", "", `sinfo -N output:1:11: node n1: feature "a\x1bb": expected a name`},
		{"n1|debug*|(null)\n", "NodeName=n1 Arch=x86_64;rm CPUTot=2\n", `scontrol show node output:1:13: node n1: Arch="x86_64;rm": expected a machine name as uname -m prints it`},
		{"n1|debug*|arm64,x86_64\n", "NodeName=n1 Arch=x86_64\n", "node n1: its features arm64, x86_64 name two platforms"},
	} {
		dir := t.TempDir()
		s, sc := filepath.Join(dir, "sinfo.txt"), filepath.Join(dir, "scontrol.txt")
		_ = os.WriteFile(s, []byte(c.sinfo), 0o644)
		_ = os.WriteFile(sc, []byte(c.scontrol), 0o644)
		fakeNodeTools(t, s, sc)
		_, err := New(Config{}).NodePlatforms(context.Background(), scheduler.PlatformQuery{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("sinfo %q scontrol %q: %v, want %q", c.sinfo, c.scontrol, err, c.want)
		}
	}
	big := make([]byte, maxNodeOutput+1)
	if _, err := parseNodeFeatures(big, scheduler.PlatformQuery{}); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("an output over the cap: %v", err)
	}
}
