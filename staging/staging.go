// Package staging keeps a staging directory: the images that pyxis,
// enroot and apptainer jobs import once for every sweep that shares the
// directory (container.staging), and run from there.
//
// The job scripts write it (templates/sbatch/launch.tmpl, "stage"); this
// package reads and prunes it under the same locks:
//
//	sha256-HEX.sqsh, sha256-HEX.sif   a staged image, complete and checked
//	sha256-HEX.EXT.use                 shared-locked by every job running
//	                                   the image; its time is the last use
//	sha256-HEX.EXT.import              held by the one job importing it
//	.sha256-HEX.EXT.NODE-PID.tmp       an import under way, or one killed
//
// A job renames its import into place only once it is complete and
// checked, so a killed import leaves a .tmp file that nothing runs.
// Nothing else in the directory is touched.
package staging

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"time"
)

var (
	imageRE    = regexp.MustCompile(`^sha256-[0-9a-f]{64}\.(sqsh|sif)$`)
	leftoverRE = regexp.MustCompile(`^\.(sha256-[0-9a-f]{64}\.(?:sqsh|sif))\..+\.tmp$`)
)

// Entry is one file of the directory that prune decided about.
type Entry struct {
	Name     string
	Size     int64
	LastUsed time.Time // images: the last job's use (or the file's time)
	// Action is what prune did or, with a dry run, would do: Removed or
	// Kept; Why says why it was kept.
	Action string
	Why    string
}

// The actions of an Entry.
const (
	Removed = "removed"
	Kept    = "kept"
)

// Options are what prune removes.
type Options struct {
	// UnusedFor: an image no job used for this long is removed.
	UnusedFor time.Duration
	Now       time.Time
	DryRun    bool // decide, remove nothing
}

// Prune removes from dir the staged images no job used for
// opt.UnusedFor and the files killed imports left, never one a running
// job holds or an import in progress writes. It returns an entry for
// every image and leftover, in name order.
func Prune(dir string, opt Options) ([]Entry, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("staging directory: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("staging directory %s: not a directory", dir)
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("staging directory: %w", err)
	}
	var out []Entry
	var errs []error
	for _, de := range des {
		if !de.Type().IsRegular() {
			continue // links, directories and the like are not the jobs'
		}
		var e Entry
		var err error
		switch name := de.Name(); {
		case imageRE.MatchString(name):
			e, err = pruneImage(dir, name, opt)
		case leftoverRE.MatchString(name):
			e, err = pruneLeftover(dir, name, leftoverRE.FindStringSubmatch(name)[1], opt)
		default:
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Name, b.Name) })
	return out, errors.Join(errs...)
}

// pruneImage removes one staged image if no job holds it and none used
// it for opt.UnusedFor.
func pruneImage(dir, name string, opt Options) (Entry, error) {
	path := filepath.Join(dir, name)
	fi, err := os.Lstat(path)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Name: name, Size: fi.Size(), LastUsed: fi.ModTime(), Action: Kept}
	use, held, err := tryLock(path + ".use")
	if err != nil {
		return Entry{}, err
	}
	defer use.release()
	if held {
		e.Why = "in use by a running job"
		return e, nil
	}
	if t := use.modTime(); t.After(e.LastUsed) {
		e.LastUsed = t
	}
	if age := opt.Now.Sub(e.LastUsed); age < opt.UnusedFor {
		e.Why = "used " + Age(age) + " ago"
		return e, nil
	}
	e.Action = Removed
	if opt.DryRun {
		return e, nil
	}
	if err := os.Remove(path); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// pruneLeftover removes the file of a killed import of image: one whose
// import lock no job holds.
func pruneLeftover(dir, name, image string, opt Options) (Entry, error) {
	path := filepath.Join(dir, name)
	fi, err := os.Lstat(path)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Name: name, Size: fi.Size(), LastUsed: fi.ModTime(), Action: Kept}
	imp, held, err := tryLock(filepath.Join(dir, image+".import"))
	if err != nil {
		return Entry{}, err
	}
	defer imp.release()
	if held {
		e.Why = "an import in progress"
		return e, nil
	}
	e.Action, e.Why = Removed, ""
	if !opt.DryRun {
		if err := os.Remove(path); err != nil {
			return Entry{}, err
		}
	}
	return e, nil
}

// lock is a lock file prune holds exclusively, or none (nil file).
type lock struct{ f *os.File }

// tryLock takes path's lock exclusively without waiting: held reports a
// job holds it. A lock file that does not exist is free; prune never
// creates one (a job would open the same name and lock another file).
func tryLock(path string) (l lock, held bool, err error) {
	// Read-write: on NFS an exclusive lock needs a file open for writing.
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return lock{}, false, nil
	}
	if err != nil {
		return lock{}, false, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return lock{}, false, fmt.Errorf("%s: not a regular file", path)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return lock{}, true, nil
	}
	if err != nil {
		f.Close()
		return lock{}, false, fmt.Errorf("locking %s: %w", path, err)
	}
	return lock{f}, false, nil
}

func (l lock) release() {
	if l.f != nil {
		l.f.Close() // closing the file releases the lock
	}
}

func (l lock) modTime() time.Time {
	if l.f == nil {
		return time.Time{}
	}
	fi, err := l.f.Stat()
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// Age is d as a person reads it: "3d", "5h", "12m", "40s".
func Age(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= 2*time.Minute:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", max(d, 0)/time.Second)
}

// WriteText writes what prune did, a line a file, then the total: what
// a person reads after "kvsweep image prune".
func WriteText(w io.Writer, es []Entry, dryRun bool) error {
	verb := map[string]string{Removed: "removed", Kept: "kept"}
	if dryRun {
		verb[Removed] = "would remove"
	}
	var freed int64
	n := 0
	for _, e := range es {
		line := fmt.Sprintf("%s %s (%s", verb[e.Action], e.Name, Size(e.Size))
		if e.Why != "" {
			line += ", " + e.Why
		}
		if _, err := fmt.Fprintln(w, line+")"); err != nil {
			return err
		}
		if e.Action == Removed {
			freed += e.Size
			n++
		}
	}
	_, err := fmt.Fprintf(w, "%s %d of %d files, %s\n", verb[Removed], n, len(es), Size(freed))
	return err
}

// Size is n bytes as a person reads it: "812 B", "3.4 GB".
func Size(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %cB", v, "kMGTP"[i])
}
