package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Contents is everything a render writes into a sweep directory.
type Contents struct {
	Manifest *Manifest
	Spec     []byte                      // the spec as the user wrote it
	Scripts  map[string][]byte           // job name -> job script
	Cells    map[string][]CellTableEntry // job name -> its cell table, by index
	Objects  map[string][]byte           // job name -> its Kubernetes Job (Job.Object)
	// Binary is a kvsweep executable to copy to BinaryPath, for jobs that
	// run kvsweep on their nodes; empty copies nothing.
	Binary string
}

// Write writes c into dir. A new (or empty) directory is written under a
// temporary name beside it and renamed into place, so a failure leaves
// nothing behind. An existing sweep directory is updated in place, the
// manifest last: its presence means the render is whole. A directory that
// holds other files is refused.
func Write(dir string, c Contents) error {
	fresh, err := isNew(dir)
	if err != nil {
		return err
	}
	if !fresh {
		return write(dir, c)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(filepath.Clean(dir))+".render-*")
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := write(tmp, c); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	// An empty directory in the way (made by the user or a test) goes;
	// Remove refuses one that is no longer empty.
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return nil
}

// isNew reports whether dir is missing or empty; an existing sweep
// directory is not new, and anything else is an error.
func isNew(dir string) (bool, error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err == io.EOF {
		return true, nil
	}
	if _, err := os.Lstat(filepath.Join(dir, ManifestFile)); err == nil {
		return false, nil
	}
	return false, fmt.Errorf("%s exists and is not a sweep directory (no %s): choose a new or empty directory", dir, ManifestFile)
}

func write(dir string, c Contents) error {
	m := c.Manifest
	for _, d := range []string{JobsDir, CellsDir, LogsDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	type file struct {
		path string
		data []byte
		perm os.FileMode
	}
	files := []file{{SpecFile, c.Spec, 0o644}, {IDFile, []byte(m.SweepID + "\n"), 0o644}}
	for _, j := range m.Jobs {
		tab, args := EncodeCellTable(c.Cells[j.Name])
		files = append(files, file{j.Script, c.Scripts[j.Name], 0o755}, file{j.Table, tab, 0o644}, file{j.Args, args, 0o644})
		if j.Object != "" {
			files = append(files, file{j.Object, c.Objects[j.Name], 0o644})
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.path), f.data, f.perm); err != nil {
			return err
		}
	}
	if c.Binary != "" {
		if err := copyBinary(c.Binary, filepath.Join(dir, BinaryPath)); err != nil {
			return fmt.Errorf("copying kvsweep for the jobs that run it: %w", err)
		}
	}
	return WriteAtomic(filepath.Join(dir, ManifestFile), 0o644, func(w io.Writer) error { return encodeManifest(w, m) })
}

// encodeManifest writes json.MarshalIndent(m, "", "  ") and a newline, a
// cell at a time: a 10,000-cell manifest is 8 MB, which MarshalIndent
// made and copied three times over (TestManifestBytes holds the two to
// the same bytes).
func encodeManifest(w io.Writer, m *Manifest) error {
	head := *m
	head.Cells = nil
	b, err := json.MarshalIndent(&head, "", "  ")
	if err != nil {
		return err
	}
	// Cells is the last field.
	const tail = "\"cells\": null\n}"
	if !bytes.HasSuffix(b, []byte(tail)) {
		return fmt.Errorf("manifest: unexpected encoding")
	}
	if m.Cells == nil {
		_, err := w.Write(append(b, '\n'))
		return err
	}
	if _, err := w.Write(append(b[:len(b)-len(tail)], "\"cells\": ["...)); err != nil {
		return err
	}
	for i := range m.Cells {
		cb, err := json.MarshalIndent(&m.Cells[i], "    ", "  ")
		if err != nil {
			return err
		}
		sep := ",\n    "
		if i == 0 {
			sep = "\n    "
		}
		if _, err := w.Write(append([]byte(sep), cb...)); err != nil {
			return err
		}
	}
	end := "\n  ]\n}\n"
	if len(m.Cells) == 0 {
		end = "]\n}\n"
	}
	_, err = w.Write([]byte(end))
	return err
}

func copyBinary(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	// Streamed, not read whole: the binary is tens of megabytes.
	return WriteAtomic(dst, 0o755, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}
