package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Function length limits, outside tests: a function longer than these
// is cut at the seams its structure shows. cmd/kvsweep is wiring.
const (
	maxFuncLines    = 80
	maxCmdFuncLines = 40
)

// pkgShape is what TestShape reads of one package's non-test files.
type pkgShape struct {
	path  string
	lines int
	funcs map[string]int // name (Type.Method for methods) -> lines
	// pairs are files that reference each other's top-level declarations.
	pairs []string
}

func shapes(t *testing.T) []pkgShape {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}", Module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var all []pkgShape
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if f[2] == "" {
			continue
		}
		p := pkgShape{path: strings.TrimPrefix(f[0], Module), funcs: map[string]int{}}
		fset := token.NewFileSet()
		files := map[string]*ast.File{}
		for _, name := range strings.Split(f[2], ",") {
			af, err := parser.ParseFile(fset, filepath.Join(f[1], name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files[name] = af
			p.lines += fset.File(af.Pos()).LineCount()
			for _, d := range af.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					p.funcs[funcName(fd)] = fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				}
			}
		}
		p.pairs = mutualFiles(files)
		all = append(all, p)
	}
	return all
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// mutualFiles lists the pairs of files of one package each of which uses
// a top-level declaration of the other.
func mutualFiles(files map[string]*ast.File) []string {
	declared := map[string]string{}
	for name, af := range files {
		for _, obj := range af.Scope.Objects {
			declared[obj.Name] = name
		}
	}
	uses := map[[2]string]bool{}
	for name, af := range files {
		for _, id := range af.Unresolved {
			if df, ok := declared[id.Name]; ok && df != name {
				uses[[2]string{name, df}] = true
			}
		}
	}
	var pairs []string
	for u := range uses {
		if u[0] < u[1] && uses[[2]string{u[1], u[0]}] {
			pairs = append(pairs, u[0]+" <-> "+u[1])
		}
	}
	slices.Sort(pairs)
	return pairs
}

// TestShape holds every function to the length limits and logs the
// module's shape (go test -v -run Shape ./internal/arch): packages and
// their lines, the largest package's share, functions over 60 lines, and
// the files of a package that use each other's declarations.
func TestShape(t *testing.T) {
	all := shapes(t)
	slices.SortFunc(all, func(a, b pkgShape) int { return b.lines - a.lines })
	total, over60, pairs := 0, 0, 0
	for _, p := range all {
		total += p.lines
		pairs += len(p.pairs)
		for name, n := range p.funcs {
			limit := maxFuncLines
			if p.path == "cmd/kvsweep" {
				limit = maxCmdFuncLines
			}
			if n > limit {
				t.Errorf("%s.%s is %d lines, over %d: cut it at the seams its structure shows", p.path, name, n, limit)
			}
			if n > 60 {
				over60++
				t.Logf("over 60 lines: %s.%s (%d)", p.path, name, n)
			}
		}
	}
	t.Logf("%d packages, %d non-test lines; the largest, %s, %d lines (%.1f%%)", len(all), total, all[0].path, all[0].lines, 100*float64(all[0].lines)/float64(total))
	t.Logf("functions over 60 lines: %d; pairs of files using each other's declarations: %d", over60, pairs)
	for _, p := range all {
		t.Logf("%-20s %5d lines %s", p.path, p.lines, fmt.Sprint(p.pairs))
	}
}
