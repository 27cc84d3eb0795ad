package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Function length limits, outside tests: a function longer than these
// is cut at the seams its structure shows. cmd/kvsweep is wiring, and
// stays under maxCmdLines: what grows there belongs in a library. A file
// past maxFileLines holds more than one concern.
const (
	maxFuncLines    = 80
	maxCmdFuncLines = 40
	maxFileLines    = 600
	maxCmdLines     = 3000
)

// pkgShape is what TestShape reads of one package's non-test files.
type pkgShape struct {
	path string
	// build is the build tag of a shape that holds only the files a tagged
	// build swaps in (cmd/kvsweep's lite.go), "" for the default build.
	build string
	lines int
	funcs map[string]int // name (Type.Method for methods) -> lines
	// lits are the function literals: a name like the compiler's
	// (Func.func1, Func.func1.1; a package-level variable's by its name,
	// reportCmd.func1) and its file and line -> lines.
	lits map[string]int
	// pairs are files that reference each other's top-level declarations.
	pairs []string
	// long are the files over maxFileLines, with their lines.
	long []string
}

// shapes reads the module's packages as the default build has them, then
// the files a -tags lite build swaps in (cmd/kvsweep's lite.go), each
// package's a shape of its own, build "lite".
func shapes(t *testing.T) []pkgShape {
	t.Helper()
	seen := map[string]bool{}
	var out []pkgShape
	for _, p := range listShapes(t, "", nil) {
		for _, f := range p.files {
			seen[f] = true
		}
		out = append(out, p.pkgShape)
	}
	for _, p := range listShapes(t, "lite", seen) {
		out = append(out, p.pkgShape)
	}
	return out
}

// listedShape is a shape with the paths of the files it read.
type listedShape struct {
	pkgShape
	files []string
}

// listShapes reads the non-test files of the module's packages that go
// list names under the build tag (none: ""), leaving out the files in
// skip (by path).
func listShapes(t *testing.T, tag string, skip map[string]bool) []listedShape {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", tag, "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}", Module+"...").Output()
	if err != nil {
		t.Fatalf("go list -tags %q: %v", tag, err)
	}
	var all []listedShape
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		p := listedShape{pkgShape: pkgShape{path: strings.TrimPrefix(f[0], Module), build: tag, funcs: map[string]int{}, lits: map[string]int{}}}
		fset := token.NewFileSet()
		files := map[string]*ast.File{}
		for _, name := range strings.Split(f[2], ",") {
			path := filepath.Join(f[1], name)
			if name == "" || skip[path] {
				continue
			}
			af, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files[name] = af
			p.files = append(p.files, path)
			n := fset.File(af.Pos()).LineCount()
			p.lines += n
			if n > maxFileLines {
				p.long = append(p.long, fmt.Sprintf("%s/%s (%d)", p.path, name, n))
			}
			measure(fset, af, p.funcs, p.lits)
		}
		if len(files) == 0 {
			continue
		}
		p.pairs = mutualFiles(files)
		all = append(all, p)
	}
	return all
}

// measure records the lines of each function of af in funcs and of each
// function literal, wherever it is (in a function, in a package-level
// variable's value), in lits.
func measure(fset *token.FileSet, af *ast.File, funcs, lits map[string]int) {
	lines := func(n ast.Node) int { return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1 }
	for _, d := range af.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Body != nil {
				funcs[funcName(d)] = lines(d)
				literals(fset, d.Body, funcName(d), ".func", lits)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				if vs, ok := spec.(*ast.ValueSpec); ok {
					for i, v := range vs.Values {
						literals(fset, v, vs.Names[min(i, len(vs.Names)-1)].Name, ".func", lits)
					}
				}
			}
		}
	}
}

// literals records the function literals in n, named as the compiler
// names them: outer.func1, outer.func2, ... (sep ".func"), and a literal
// inside one, outer.func1.1 (sep "."); with their file and line.
func literals(fset *token.FileSet, n ast.Node, outer, sep string, lits map[string]int) {
	i := 0
	ast.Inspect(n, func(n ast.Node) bool {
		fl, ok := n.(*ast.FuncLit)
		if !ok {
			return true
		}
		i++
		name := fmt.Sprintf("%s%s%d", outer, sep, i)
		pos := fset.Position(fl.Pos())
		lits[fmt.Sprintf("%s (%s:%d)", name, filepath.Base(pos.Filename), pos.Line)] = fset.Position(fl.End()).Line - pos.Line + 1
		literals(fset, fl.Body, name, ".", lits)
		return false
	})
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

// overLimit says, one sentence each, which functions and function
// literals of p pass its package's length limit.
func overLimit(p pkgShape) []string {
	limit := maxFuncLines
	if p.path == "cmd/kvsweep" {
		limit = maxCmdFuncLines
	}
	var out []string
	for fn, n := range p.funcs {
		if n > limit {
			out = append(out, fmt.Sprintf("%s: %s.%s is %d lines, over %d: cut it at the seams its structure shows", p.name(), p.path, fn, n, limit))
		}
	}
	for lit, n := range p.lits {
		if n > limit {
			out = append(out, fmt.Sprintf("%s: the function literal %s.%s is %d lines, over %d: cut it at the seams its structure shows", p.name(), p.path, lit, n, limit))
		}
	}
	slices.Sort(out)
	return out
}

// name is the package's path, with the build tag of a tagged shape.
func (p pkgShape) name() string {
	if p.build != "" {
		return p.path + " (-tags " + p.build + ")"
	}
	return p.path
}

// TestShape holds every function and function literal to the length
// limits, every file to maxFileLines and cmd/kvsweep to maxCmdLines, in the default build and in the files -tags lite swaps in, and
// logs the module's shape (go test -v -run Shape ./internal/arch):
// packages and their lines, the largest package's share, functions over 60 lines, and the files of a package that use
// each other's declarations.
func TestShape(t *testing.T) {
	all := shapes(t)
	slices.SortFunc(all, func(a, b pkgShape) int { return b.lines - a.lines })
	var largest *pkgShape
	pkgs, total, over60, pairs, cmdLines := 0, 0, 0, 0, 0
	for i, p := range all {
		for _, v := range overLimit(p) {
			t.Error(v)
		}
		for _, f := range p.long {
			t.Errorf("%s is over %d lines: cut it by concern", f, maxFileLines)
		}
		if p.path == "cmd/kvsweep" {
			cmdLines += p.lines // every build's files: the default's and those -tags lite swaps in
		}
		for fn, n := range p.funcs {
			if n > 60 {
				over60++
				t.Logf("over 60 lines: %s.%s (%d)", p.name(), fn, n)
			}
		}
		if p.build == "" {
			pkgs, total, pairs = pkgs+1, total+p.lines, pairs+len(p.pairs)
			if largest == nil {
				largest = &all[i]
			}
		}
	}
	if cmdLines > maxCmdLines {
		t.Errorf("cmd/kvsweep has %d non-test lines, over %d: move what is not flags, printing and exit codes into a library (lane)", cmdLines, maxCmdLines)
	}
	t.Logf("%d packages, %d non-test lines; the largest, %s, %d lines (%.1f%%)", pkgs, total, largest.path, largest.lines, 100*float64(largest.lines)/float64(total))
	t.Logf("functions over 60 lines: %d; pairs of files using each other's declarations: %d", over60, pairs)
	for _, p := range all {
		t.Logf("%-20s %5d lines %s", p.name(), p.lines, fmt.Sprint(p.pairs))
	}
}

// The limits hold function literals as they hold functions: one in a
// function and one in a package-level variable's value, named as the
// compiler names them, with their place; a literal inside one counted on
// its own.
func TestShapeMeasuresLiterals(t *testing.T) {
	long := strings.Repeat("\t_ = 0\n", 85)
	src := "package p\n\nfunc Short() {\n\tf := func() {}\n\tf()\n}\n\n" +
		"func (T) Long() {\n\t_ = func() {\n" + long + "\t}\n}\n\n" +
		"var cmd = struct{ run func() }{run: func() {\n\t_ = func() {\n" + long + "\t}\n}}\n\ntype T struct{}\n"
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := pkgShape{path: "p", funcs: map[string]int{}, lits: map[string]int{}}
	measure(fset, af, p.funcs, p.lits)
	want := map[string]int{"Short.func1 (p.go:4)": 1, "T.Long.func1 (p.go:9)": 87, "cmd.func1 (p.go:98)": 89, "cmd.func1.1 (p.go:99)": 87}
	if !maps.Equal(p.lits, want) {
		t.Errorf("literals: %v, want %v", p.lits, want)
	}
	got := overLimit(p)
	if len(got) != 4 || !strings.HasPrefix(got[0], "p: p.T.Long is 89 lines, over 80") ||
		!strings.HasPrefix(got[1], "p: the function literal p.T.Long.func1 (p.go:9) is 87 lines, over 80") ||
		!strings.HasPrefix(got[2], "p: the function literal p.cmd.func1 (p.go:98) is 89 lines") ||
		!strings.HasPrefix(got[3], "p: the function literal p.cmd.func1.1 (p.go:99) is 87 lines") {
		t.Errorf("overLimit = %q", got)
	}
	p.path, p.build = "cmd/kvsweep", "lite"
	if got := overLimit(p); len(got) != 4 || !strings.Contains(got[0], "cmd/kvsweep (-tags lite): ") || !strings.Contains(got[0], "over 40") {
		t.Errorf("overLimit in cmd/kvsweep's lite build = %q", got)
	}
}
