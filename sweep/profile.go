package sweep

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
)

// ProfileDir is the folder of a cell's directory where its profiles
// land: the nsys reports of the wrapped workers (WORKER.nsys-rep), the
// engines' torch traces (a folder per case and worker), and
// ProfileLogFile, what the job did to take them.
const (
	ProfileDir     = "profile"
	ProfileLogFile = "profile/profile.jsonl"
)

// MaxProfileLog bounds what collect reads of ProfileLogFile.
const MaxProfileLog = 1 << 20

// ProfilePlan is the spec's profile section as the jobs read it.
type ProfilePlan struct {
	// Tool is nsys or torch.
	Tool string `json:"tool"`
	// Cases are the profiled cases; empty: every case (torch), the
	// workers' whole run (nsys).
	Cases []string `json:"cases,omitempty"`
	// Workers are the profiled workers' names; empty: every worker.
	Workers []string `json:"workers,omitempty"`
	// DelayS and DurationS bound the window, in seconds (0: none).
	DelayS    int  `json:"delay_s,omitempty"`
	DurationS int  `json:"duration_s,omitempty"`
	Required  bool `json:"required,omitempty"`
}

// Profiled reports whether the plan profiles caseID.
func (p *ProfilePlan) Profiled(caseID string) bool {
	if p == nil {
		return false
	}
	if len(p.Cases) == 0 {
		return p.Tool != "nsys"
	}
	for _, c := range p.Cases {
		if c == caseID {
			return true
		}
	}
	return false
}

// ProfiledWorker reports whether the plan profiles the worker named name.
func (p *ProfilePlan) ProfiledWorker(name string) bool {
	if p == nil {
		return false
	}
	if len(p.Workers) == 0 {
		return true
	}
	for _, w := range p.Workers {
		if w == name {
			return true
		}
	}
	return false
}

// ListedFile is a regular file below a folder of a cell directory: its
// path in the cell directory and its size.
type ListedFile struct {
	Path string
	Size int64
}

// errEnough ends a listing that reached its bound.
var errEnough = errors.New("enough")

// ListFiles lists the regular files below dir (slash-separated, in the
// cell directory), at most max of them, in lexical order, never following
// a link; what is not a regular file (a link, a pipe) is named in other,
// and more is true when files past max were left out. A dir that does
// not exist lists nothing.
func (c *CellFiles) ListFiles(dir string, max int) (files []ListedFile, other []string, more bool, err error) {
	if !c.Has(dir) {
		return nil, nil, false, nil
	}
	root, err := c.cellRoot()
	if err != nil {
		return nil, nil, false, &RefusedError{c.prefix + dir, escape(c.dir, c.prefix+dir, err)}
	}
	fi, err := root.Lstat(filepath.FromSlash(dir))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, false, nil
	case err != nil:
		return nil, nil, false, err
	case !fi.IsDir():
		return nil, nil, false, &RefusedError{c.prefix + dir, "is a " + FileKind(fi.Mode()) + ", not a directory"}
	}
	seen := 0
	err = fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		// Folders count too: a tree of empty ones is read no further.
		if seen++; seen > 16*max {
			more = true
			return errEnough
		}
		switch {
		case err != nil:
			other = append(other, p+" (unreadable)")
			return nil
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			other = append(other, p+" (symbolic link, not followed)")
			return nil
		case !d.Type().IsRegular():
			other = append(other, p+" ("+FileKind(d.Type())+")")
			return nil
		case len(files) == max:
			more = true
			return errEnough
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		files = append(files, ListedFile{Path: path.Clean(p), Size: info.Size()})
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return files, other, more, err
}
