package harness

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
)

// Validate is every problem of the result.json at path,, "FILE:LINE:COL:
// MESSAGE" in the order of the file (kvsweep result validate); the
// error is a file that could not be read.
func Validate(path string, maxSize int64) ([]string, error) {
	b, err := sweep.ReadFile(filepath.Dir(path), filepath.Base(path), maxSize)
	if err != nil {
		var pe *iofs.PathError
		if errors.As(err, &pe) && pe.Path == filepath.Clean(path) {
			err = pe.Err // the path is said already: "FILE: no such file or directory"
		}
		return nil, err
	}
	var msgs []string
	for _, err := range result.Problems(b) {
		if line, col := result.Position(b, err); line > 0 {
			msgs = append(msgs, fmt.Sprintf("%s:%d:%d: %v", path, line, col, err))
		} else {
			msgs = append(msgs, fmt.Sprintf("%s: %v", path, err))
		}
	}
	return msgs, nil
}
