package harness

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
)

// Spec is where the spec says a cell's harness writes its result when it
// writes no result.json: at most one of Native (harness.native_result)
// and Client (harness.result); neither, result.json only.
type Spec struct {
	Native *sweep.NativeResult
	Client *sweep.ClientResult
}

// File is the file the spec names besides result.json ("" for none).
func (s Spec) File() string {
	switch {
	case s.Native != nil:
		return s.Native.File
	case s.Client != nil:
		return s.Client.File
	}
	return ""
}

// ReadFile reads b, the contents of the spec's file, as the result of
// cell c: by the native mapping, or as the client's format with its runs
// matched to the cell's cases; name says where in a client file's errors
// (the native mapping names its own File). The errors are the reader's;
// Read says which reader before them.
func (s Spec) ReadFile(name string, b []byte, c sweep.Cell) (*result.Result, error) {
	switch {
	case s.Native != nil:
		return FromNative(s.Native, b, c)
	case s.Client != nil:
		cl := s.Client
		runs, err := ReadRuns(cl.Format, name, b)
		if err != nil {
			return nil, err
		}
		r, err := Cases(runs, c.Cases, Mapping{By: cl.CaseBy, Values: cl.Values}, name)
		if err != nil {
			return nil, err
		}
		r.CellID = c.ID
		return r, nil
	}
	return nil, fmt.Errorf("the spec names no file besides %s", sweep.ResultFile)
}

// what names the spec's file in a message about reading it.
func (s Spec) what() string {
	if s.Client != nil {
		return s.Client.Format + " result"
	}
	return "native result"
}

// MissingError is a cell whose harness wrote none of the files it may
// write: no result.json, and no File where the spec names one ("" where
// it names none).
type MissingError struct{ File string }

func (e *MissingError) Error() string {
	if e.File == "" {
		return "no " + sweep.ResultFile
	}
	return "no " + sweep.ResultFile + " and no " + e.File
}

// noResult is the MissingError of every cell without result.json whose
// spec names no other file: one, so a sweep of cells that have not run
// costs no allocation a cell to say so.
var noResult = &MissingError{}

// Reader reads cells' results one after another, reusing what one cell's
// reading leaves (the parser's scratch, the buffer a result.json is read
// into): one a goroutine.
type Reader struct {
	scratch result.Scratch
	buf     []byte
}

// maxKeptBuffer bounds the buffer a Reader keeps: a result larger than
// this is read into a buffer of its own.
const maxKeptBuffer = 1 << 20

// Read reads the result the harness of cell c wrote in files: its
// result.json when there is one, else the file spec names; no file
// larger than maxSize. None there is a *MissingError; a file that cannot
// be read, or does not read as its kind, is an error naming it and,
// where it can, the place in it.
func (rd *Reader) Read(files *sweep.CellFiles, c sweep.Cell, spec Spec, maxSize int64) (*result.Result, error) {
	b, err := files.ReadFileInto(sweep.ResultFile, maxSize, rd.buf)
	if cap(b) > cap(rd.buf) && cap(b) <= maxKeptBuffer {
		rd.buf = b[:0]
	}
	if errors.Is(err, os.ErrNotExist) && spec.File() != "" {
		return readSpecFile(files, c, spec, maxSize)
	}
	if err != nil {
		return nil, readError(err)
	}
	r, err := rd.scratch.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sweep.ResultFile, err)
	}
	return r, nil
}

// readError is what Read returns when result.json could not be read
// (err) and the spec names no file instead: none there, or why.
func readError(err error) error {
	var refused *sweep.RefusedError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return noResult
	case errors.As(err, &refused):
		msg := sweep.ResultFile + " " + refused.Reason
		if strings.Contains(refused.Reason, "limit") {
			msg += " (--max-result-size)"
		}
		return errors.New(msg)
	}
	return err
}

// readSpecFile reads the file spec names, for a cell without result.json.
func readSpecFile(files *sweep.CellFiles, c sweep.Cell, spec Spec, maxSize int64) (*result.Result, error) {
	b, err := files.ReadFile(spec.File(), maxSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &MissingError{File: spec.File()}
	}
	if err != nil {
		return nil, fmt.Errorf("%s %w", spec.what(), err)
	}
	r, err := spec.ReadFile(spec.File(), b, c)
	if err != nil && spec.Native != nil {
		return nil, fmt.Errorf("native result %s: %w", spec.File(), err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.what(), err)
	}
	return r, nil
}
