package testrun

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/kvsweep/kvsweep/sweep"
)

// Gathered is what GatherArtifacts copied and left out.
type Gathered struct {
	Cells int // cells that did not pass
	// Profiled is the cells that passed whose profiles were gathered.
	Profiled int
	Files    int
	Bytes    int64
	LeftOut  []string // "PATH (why)"
}

// GatherArtifacts copies the evidence and logs (the cell directory's
// *.out, *.err and *.log files) of every cell that did not pass, then the
// profile files of the cells that passed (spec profile), into dst,
// under the same paths as in the sweep, for a CI job to upload: regular
// files inside the cell's directory only, at most max bytes in all (the
// failing cells in order, each file whole or not at all). What was copied
// and what was left out, with why, is written to dst/ARTIFACTS.txt.
func (r *Run) GatherArtifacts(dst string, max int64) (Gathered, error) {
	var g Gathered
	if r.Dir == "" {
		return g, errors.New("the run has no sweep directory to gather artifacts from")
	}
	var listing strings.Builder
	for _, c := range r.Cells {
		if passed(c) {
			continue
		}
		g.Cells++
		if err := g.cell(r.Dir, dst, c, max, &listing); err != nil {
			return g, err
		}
	}
	for _, c := range r.Cells {
		if profiled(c) {
			g.Profiled++
			if err := g.cell(r.Dir, dst, c, max, &listing); err != nil {
				return g, err
			}
		}
	}
	fmt.Fprintf(&listing, "\n%d files, %s, of %d cells that did not pass (at most %s)\n", g.Files, sweep.Size(g.Bytes), g.Cells, sweep.Size(max))
	if g.Profiled > 0 {
		fmt.Fprintf(&listing, "with the profiles of %d cells that passed\n", g.Profiled)
	}
	for _, l := range g.LeftOut {
		fmt.Fprintf(&listing, "left out: %s\n", l)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return g, err
	}
	return g, os.WriteFile(filepath.Join(dst, "ARTIFACTS.txt"), []byte(listing.String()), 0o644)
}

// passed reports whether a cell passed: a valid result, every case PASS
// or SKIP.
func passed(c CellResult) bool {
	return c.Outcome == OK && c.Class == ""
}

// cell copies one cell's files.
func (g *Gathered) cell(sweepDir, dst string, c CellResult, max int64, listing *strings.Builder) error {
	rel := path.Join(sweep.CellsDir, c.CellID)
	root, err := os.OpenRoot(filepath.Join(sweepDir, filepath.FromSlash(rel)))
	if err != nil {
		g.LeftOut = append(g.LeftOut, rel+" ("+err.Error()+")")
		return nil
	}
	defer root.Close()
	fmt.Fprintf(listing, "%s (%s): %s\n", c.Name, c.CellID, OutcomeText(c))
	for _, name := range cellFiles(root, c) {
		p := path.Join(rel, name)
		fi, err := root.Lstat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			g.LeftOut = append(g.LeftOut, p+" (missing)")
			continue
		case err != nil:
			g.LeftOut = append(g.LeftOut, p+" (outside the cell's directory)")
			continue
		case !fi.Mode().IsRegular():
			g.LeftOut = append(g.LeftOut, p+" (not a regular file)")
			continue
		case g.Bytes+fi.Size() > max:
			g.LeftOut = append(g.LeftOut, fmt.Sprintf("%s (%s: over the %s limit)", p, sweep.Size(fi.Size()), sweep.Size(max)))
			continue
		}
		n, err := copyIn(root, name, filepath.Join(dst, filepath.FromSlash(p)), fi.Size())
		if err != nil {
			g.LeftOut = append(g.LeftOut, p+" ("+err.Error()+")")
			continue
		}
		g.Files++
		g.Bytes += n
		fmt.Fprintf(listing, "  %s (%s)\n", p, sweep.Size(n))
	}
	return nil
}

// cellFiles are a cell's evidence and its logs, each once, sorted.
func cellFiles(root *os.Root, c CellResult) []string {
	if profiled(c) {
		return profilePaths(c)
	}
	set := map[string]bool{}
	for _, e := range c.Evidence {
		set[path.Clean(e)] = true
	}
	if f, err := root.Open("."); err == nil {
		names, _ := f.Readdirnames(-1)
		f.Close()
		for _, n := range names {
			if strings.HasSuffix(n, ".out") || strings.HasSuffix(n, ".err") || strings.HasSuffix(n, ".log") {
				set[n] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// copyIn copies at most size bytes of name (no link followed) to dst.
func copyIn(root *os.Root, name, dst string, size int64) (int64, error) {
	in, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(in, size))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}
