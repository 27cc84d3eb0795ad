package arch

import (
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modulePackages lists the module's packages as go list sees them.
func modulePackages(t *testing.T) []Package {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", Module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []Package
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		p := Package{Path: strings.TrimPrefix(f[0], Module), Deps: strings.Fields(f[2])}
		for _, imp := range strings.Fields(f[1]) {
			if rel, ok := strings.CutPrefix(imp, Module); ok {
				p.Imports = append(p.Imports, rel)
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestPackageGraph(t *testing.T) {
	pkgs := modulePackages(t)
	for _, v := range Check(pkgs, Allowed, Heavy) {
		t.Error(v)
	}
	for name := range Allowed {
		if !slices.ContainsFunc(pkgs, func(p Package) bool { return p.Path == name }) {
			t.Errorf("the allow-list has a line for %s, which is no package of the module", name)
		}
	}
}

// Check refuses each way of breaking the graph, naming the package and
// what it did.
func TestCheckRefuses(t *testing.T) {
	allowed := map[string][]string{"reports": {"testrun"}, "testrun": {}, "scheduler": {}, "internal/shq": {"testrun"}}
	heavy := map[string][]string{"k8s.io/client-go": {"scheduler"}}
	for _, tc := range []struct {
		name string
		pkg  Package
		want string
	}{
		{"planted import", Package{Path: "reports", Imports: []string{"testrun", "scheduler"}},
			"reports imports scheduler, which its line does not allow (allowed: testrun)"},
		{"new package", Package{Path: "newpkg"}, "newpkg has no line in the allow-list"},
		{"heavy tree", Package{Path: "testrun", Deps: []string{"k8s.io/client-go/rest"}},
			"testrun depends on k8s.io/client-go/rest, which belongs to scheduler only"},
		{"upward import", Package{Path: "internal/shq", Imports: []string{"testrun"}},
			"internal/shq imports testrun: a package of internal/ imports only internal/ packages"},
	} {
		got := Check([]Package{tc.pkg}, allowed, heavy)
		if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
			t.Errorf("%s: Check = %q, want one %q", tc.name, got, tc.want)
		}
	}
	// A heavy tree that comes through its owner is the owner's.
	ok := Package{Path: "reports", Imports: []string{"testrun"}, Deps: []string{Module + "scheduler", "k8s.io/client-go/rest"}}
	if got := Check([]Package{ok}, allowed, heavy); len(got) != 0 {
		t.Errorf("Check of an allowed graph = %q", got)
	}
}

// The table of docs/architecture.md says what Allowed says: one row per
// package, its "may import" column the same set.
func TestDocTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z0-9/]+)` \\|.*\\| ([^|]*) \\|$")
	name := regexp.MustCompile("`([a-z0-9/]+)`")
	doc := map[string][]string{}
	for line := range strings.Lines(string(b)) {
		m := row.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		may := []string{}
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			may = append(may, n[1])
		}
		doc[m[1]] = may
	}
	for pkg, may := range Allowed {
		got, ok := doc[pkg]
		if !ok {
			t.Errorf("docs/architecture.md has no row for %s", pkg)
			continue
		}
		want := slices.Sorted(slices.Values(may))
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("docs/architecture.md: %s may import %v; internal/arch.Allowed says %v", pkg, got, want)
		}
	}
	for pkg := range doc {
		if _, ok := Allowed[pkg]; !ok {
			t.Errorf("docs/architecture.md has a row for %s, which internal/arch.Allowed lacks", pkg)
		}
	}
}

// README's layout table names every top-level directory of the module
// and every package outside internal/, so a newcomer finds each one.
func TestReadmeLayout(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z0-9/]+)/` \\|")
	listed := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		if m := row.FindStringSubmatch(line); m != nil {
			listed[m[1]] = true
		}
	}
	want := map[string]bool{}
	for pkg := range Allowed {
		if !strings.HasPrefix(pkg, "internal/") {
			want[pkg] = true
		}
		want[strings.Split(pkg, "/")[0]] = true
	}
	entries, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "cmd" {
			want[e.Name()] = true
		}
	}
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if !listed[p] && p != "cmd" {
			t.Errorf("README.md's layout table has no row for %s/", p)
		}
	}
}
