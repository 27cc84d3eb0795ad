package sweep

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Size limits of the files kvsweep reads from a sweep directory. A sweep
// directory may come from anywhere (a shared file system, a colleague, an
// archive): every read is bounded and stays inside the directory.
const (
	MaxManifestSize  = 512 << 20
	MaxJournalSize   = 512 << 20
	MaxMarkerSize    = 64 << 10
	MaxObservedSize  = 128 << 20
	MaxResultsSize   = 1 << 30
	MaxRevisionsSize = 1 << 20
)

// ReadFile reads rel, a slash-separated path inside the sweep directory
// dir, refusing what a sweep directory never legitimately holds: a path
// that leaves dir (through "..", an absolute link or a link in any
// component), anything but a regular file (a FIFO would block the reader
// forever, a device would never end), and a file over max bytes. A missing
// file is an error wrapping fs.ErrNotExist. Errors name the file.
func ReadFile(dir, rel string, max int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return readIn(root, dir, rel, max)
}

func readIn(root *os.Root, dir, rel string, max int64) ([]byte, error) {
	name := filepath.Join(dir, rel)
	// O_NONBLOCK: opening a FIFO must not wait for a writer; on a regular
	// file it changes nothing.
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("%s: refused: %v (kvsweep reads only regular files inside the sweep directory)", name, pe.Err)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: refused: a %s, not a regular file", name, kind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: refused: %d bytes, over the %d-byte limit", name, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: refused: grew past the %d-byte limit while being read", name, max)
	}
	return b, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}

// WriteFileAtomic writes data to path through a temporary file and rename,
// so a reader sees the old or the new content, never a part.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
