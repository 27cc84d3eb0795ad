package matrix

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// HarnessWorkdir says where a cell's harness starts, so where a relative
// path among its words is looked up: container.workdir when the spec
// sets it; else the sweep directory under runtime none (the job runs from
// it) and apptainer (which keeps the job's working directory, mounted at
// its own path); else the image's WORKDIR.
func (s *Spec) HarnessWorkdir() string {
	switch {
	case s.Container.Workdir != "":
		return s.Container.Workdir + " (container.workdir)"
	case s.Scheduler == "k8s":
		return "the image's WORKDIR (scheduler k8s)"
	case s.Container.Runtime == "none" || s.Container.Runtime == "apptainer":
		return "the sweep directory (runtime " + s.Container.Runtime + ")"
	}
	return "the image's WORKDIR (runtime " + s.Container.Runtime + ")"
}

// checkWord holds a harness word to what the job will find: a word made
// with {{.SpecDir}} names a file beside the spec, which must exist now (a
// harness that is not there fails every cell, and only after the queue);
// a relative path to a file beside the spec, or in the directory kvsweep
// runs in, is looked up in the harness's working directory instead, which
// is warned about. v is the word as written, word what it evaluated to.
func (x *expander) checkWord(v Value, where string, i int, word string) {
	if x.specDir == "" || x.failed[v.Pos] || x.warned[v.Pos] {
		return
	}
	if strings.Contains(v.S, ".SpecDir") {
		at := strings.Index(word, x.specDir)
		if at < 0 {
			return
		}
		path := word[at:]
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			x.failed[v.Pos] = true
			x.d.ErrAt(v, "%s[%d]: %q names %s, which does not exist (expected a file beside the spec: the harness of every cell would fail to start)", where, i, v.S, path)
			return
		}
		if why := x.unseen(path); why != "" {
			x.warned[v.Pos] = true
			x.s.Warnings = append(x.s.Warnings, &Error{File: x.s.File, Pos: v.Pos,
				Msg: fmt.Sprintf("%s[%d]: %q names %s on this machine, but %s", where, i, v.S, path, why)})
		}
		return
	}
	rel := word
	if strings.HasPrefix(rel, "-") {
		k := strings.IndexByte(rel, '=')
		if k < 0 {
			return
		}
		rel = rel[k+1:]
	}
	if rel == "" || filepath.IsAbs(rel) || strings.ContainsAny(rel, "$@~:") || strings.HasPrefix(rel, "-") {
		return
	}
	fix := ""
	if isFile(filepath.Join(x.specDir, rel)) {
		fix = "write \"{{.SpecDir}}/" + filepath.ToSlash(filepath.Clean(rel)) + "\" for the file beside the spec"
	} else if abs, err := filepath.Abs(rel); err == nil && isFile(abs) {
		fix = "write its absolute path, " + abs
	} else {
		return
	}
	x.warned[v.Pos] = true
	x.s.Warnings = append(x.s.Warnings, &Error{File: x.s.File, Pos: v.Pos,
		Msg: fmt.Sprintf("%s[%d]: %q is a relative path, but the harness runs in %s, not beside the spec: %s", where, i, word, x.s.HarnessWorkdir(), fix)})
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// unseen says why the harness would not see path, a file beside the spec,
// where it runs ("" when it would): a pod sees no directory of this
// machine, and a container only what it mounts at the same path (the
// sweep directory, and container.mounts).
func (x *expander) unseen(path string) string {
	switch {
	case x.s.Scheduler == "k8s":
		return "the pods of scheduler k8s see no directory of this machine (expected a path in the image)"
	case x.s.Container.Runtime == "none":
		return ""
	}
	for _, m := range x.s.Container.Mounts {
		src, rest, _ := strings.Cut(m, ":")
		dst, _, _ := strings.Cut(rest, ":")
		if rel, err := filepath.Rel(src, path); src == dst && err == nil && !strings.HasPrefix(rel, "..") {
			return ""
		}
	}
	return "the harness runs in the image (runtime " + x.s.Container.Runtime + "), which sees it only if container.mounts mounts a directory holding it at the same path (" + filepath.Dir(path) + ":" + filepath.Dir(path) + ")"
}
