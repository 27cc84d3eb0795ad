package testrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/kvsweep/kvsweep/internal/jsonsplit"
	"github.com/kvsweep/kvsweep/sweep"
)

// results.json is one JSON object, the Run; its cells array is nearly all
// of it (a 10,000-cell sweep writes 16 MB). WriteRun and ReadRun encode
// and decode the cells on every CPU, a span of cells each, and the rest of
// the run as encoding/json does; the bytes are exactly json.Marshal's.

// WriteRun writes run as the sweep's results.json.
func WriteRun(dir string, run *Run) error {
	return sweep.WriteAtomic(filepath.Join(dir, sweep.ResultsFile), 0o644, func(w io.Writer) error {
		return encodeRun(w, run)
	})
}

// encodeRun writes json.Marshal(run) and a newline.
func encodeRun(w io.Writer, run *Run) error {
	head := *run
	head.Cells, head.Notes = nil, nil
	b, err := json.Marshal(&head)
	if err != nil {
		return err
	}
	// Cells is the last field json.Marshal writes but for Notes, which is
	// omitted when empty (TestRunFileBytes holds this to json.Marshal).
	const tail = `"cells":null}`
	if !bytes.HasSuffix(b, []byte(tail)) {
		return fmt.Errorf("results.json: unexpected encoding of the run")
	}
	bw := &errWriter{w: w}
	bw.write(b[:len(b)-len(tail)])
	if run.Cells == nil {
		bw.write([]byte(`"cells":null`))
	} else {
		bw.write([]byte(`"cells":[`))
		if err := encodeCells(bw, run.Cells); err != nil {
			return err
		}
		bw.write([]byte{']'})
	}
	if len(run.Notes) > 0 {
		nb, err := json.Marshal(run.Notes)
		if err != nil {
			return err
		}
		bw.write([]byte(`,"notes":`))
		bw.write(nb)
	}
	bw.write([]byte("}\n"))
	return bw.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) write(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

// cellsPerPart is how many cells one worker encodes at a time: a few
// hundred kilobytes, so the encoding of a large run is never all in memory.
const cellsPerPart = 256

// encodeCells writes the cells, comma-separated, to w: in rounds of one
// part of cellsPerPart cells per CPU, encoded in parallel and written in
// order.
func encodeCells(w *errWriter, cells []CellResult) error {
	workers := runtime.GOMAXPROCS(0)
	parts := make([]bytes.Buffer, workers)
	errs := make([]error, workers)
	for round := 0; round < len(cells); round += workers * cellsPerPart {
		var wg sync.WaitGroup
		for k := range parts {
			from := round + k*cellsPerPart
			to := min(from+cellsPerPart, len(cells))
			parts[k].Reset()
			if from >= to {
				continue
			}
			wg.Go(func() {
				b := parts[k].AvailableBuffer()
				var w cellWriter
				for i := from; i < to; i++ {
					if i > 0 {
						b = append(b, ',')
					}
					var err error
					if b, err = w.append(b, &cells[i]); err != nil {
						errs[k] = err
						return
					}
				}
				parts[k].Write(b)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		for k := range parts {
			w.write(parts[k].Bytes())
		}
	}
	return w.err
}

// ReadRun reads the results.json of the sweep in dir.
func ReadRun(dir string) (*Run, error) {
	b, err := sweep.ReadFile(dir, sweep.ResultsFile, sweep.MaxResultsSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: run kvsweep collect %s first", dir, sweep.ResultsFile, dir)
	}
	if err != nil {
		return nil, err
	}
	r, err := decodeRun(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, sweep.ResultsFile), err)
	}
	r.Dir = dir
	return r, nil
}

// decodeRun is json.Unmarshal of a Run, its cells decoded on every CPU.
// Anything it does not expect (no cells array, or one that does not split
// into elements) it leaves to json.Unmarshal, which also says what is
// wrong with a document that does not decode.
func decodeRun(b []byte) (*Run, error) {
	if r, ok := decodeRunParallel(b); ok {
		return r, nil
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func decodeRunParallel(b []byte) (*Run, bool) {
	var r Run
	if !jsonsplit.Unmarshal(b, "cells", &r, &r.Cells, cellDecoder) {
		return nil, false
	}
	return &r, true
}
