package main

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/harness"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

func init() { register(resultCmd) }

var resultCmd = &command{
	name:    "result",
	args:    "schema | validate FILE... | read --format FORMAT FILE",
	summary: "The result.json contract, for harness authors: its schema, and a validator",
	help: `  kvsweep result schema              prints the result.json v1 JSON Schema
  kvsweep result validate FILE...    checks files against it, as collect does
  kvsweep result read --format vllm-bench bench.json
                                     what collect records from a benchmark
                                     client's file (harness.result)

validate prints "FILE: ok" for a valid file, else every problem of it
with its place, in the order of the file, one a line: "FILE:LINE:COL: at
/cases/0/verdict: value must be one of ...". It exits 1 when a file is
not valid, 2 when a file is not there. docs/results.md has a minimal harness
in Python and in shell.`,
	subs: []*command{
		resultReadCmd,
		{name: "schema", summary: "Print the result.json v1 JSON Schema", setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			return func(e *env, args []string) error {
				if len(args) != 0 {
					return usagef("expected no arguments")
				}
				_, err := e.stdout.Write(result.Schema())
				return err
			}
		}},
		{name: "validate", args: "FILE...", summary: "Check result.json files against the schema", setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			maxSize := fs.Int64("max-result-size", testrun.DefaultMaxResultSize, "largest file accepted, in bytes")
			return func(e *env, args []string) error {
				if len(args) == 0 {
					return usagef("expected one or more result.json files")
				}
				bad := 0
				missing := 0
				for _, path := range args {
					if msgs, err := validateResult(path, *maxSize); err != nil {
						fmt.Fprintf(e.stdout, "%s: %v\n", path, err)
						bad++
						if errors.Is(err, iofs.ErrNotExist) {
							missing++
						}
					} else if len(msgs) > 0 {
						fmt.Fprintln(e.stdout, strings.Join(msgs, "\n"))
						bad++
					} else {
						fmt.Fprintf(e.stdout, "%s: ok\n", path)
					}
				}
				switch {
				case missing > 0:
					// A file that is not there is the caller's to fix (exit 2).
					return notThere(fmt.Sprintf("%d of %d file(s) are not valid result.json v1, %d of them not there", bad, len(args), missing))
				case bad > 0:
					return fmt.Errorf("%d of %d file(s) are not valid result.json v1", bad, len(args))
				}
				return nil
			}
		}},
	},
}

// notThere is an input that is not there, said in a message of its own:
// exit 2, as a missing spec or sweep directory.
type notThere string

func (e notThere) Error() string { return string(e) }
func (e notThere) Unwrap() error { return iofs.ErrNotExist }

// validateResult is every problem of one file, "FILE:LINE:COL: MESSAGE"
// in the order of the file; the error is a file that could not be read.
func validateResult(path string, maxSize int64) ([]string, error) {
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

var resultReadCmd = &command{
	name: "read", args: "(--format FORMAT | --spec SPEC) [--cases ID,...] [--case-by BY] [--value ID=VALUE]... FILE",
	summary: "Print what collect records from a benchmark client's output file",
	help: `Reads FILE as collect reads a cell's harness.result file of FORMAT
(vllm-bench, sglang-bench, aiperf, inference-perf, inference-perf-prometheus)
and prints, as JSON, the cases with their verdicts and metrics in kvsweep's
names and units: a harness author checks a mapping without running a sweep.
The files carry no verdict: a run that completed requests is a PASS for the
spec's validity rules to judge, one that completed none a FAIL. Without
--cases each run is a case named line-N. docs/results.md has each format's
table of source keys. --spec reads FILE by the spec's harness.result or
harness.native_result instead (its mapping, case_by and values; --cases
names the cell's cases).`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		format := fs.String("format", "", "the client's format")
		specPath := fs.String("spec", "", "read FILE by this spec's harness.result or native_result")
		cases := fs.StringSlice("cases", nil, "the cell's case ids, matched to the runs by --case-by")
		by := fs.String("case-by", harness.ByLine, "line, tag, request_rate or max_concurrency")
		values := fs.StringToString("value", nil, "ID=VALUE: the request rate or concurrency of a case's run (repeatable)")
		maxSize := fs.Int64("max-result-size", testrun.DefaultMaxResultSize, "largest file accepted, in bytes")
		return func(e *env, args []string) error {
			path, err := oneArg(args, "the client's output file")
			if err != nil {
				return err
			}
			if (*format == "") == (*specPath == "") {
				return usagef("give --format (one of %s) or --spec SPEC", strings.Join(harness.Formats, ", "))
			}
			if *format != "" && !slices.Contains(harness.Formats, *format) {
				return usagef("--format: unknown format %q (expected one of %s)", *format, strings.Join(harness.Formats, ", "))
			}
			b, err := sweep.ReadFile(filepath.Dir(path), filepath.Base(path), *maxSize)
			if err != nil {
				return err
			}
			var res *result.Result
			if *specPath != "" {
				res, err = readBySpec(*specPath, path, b, *cases)
			} else {
				res, err = harness.ReadCases(*format, path, b, *cases, harness.Mapping{By: *by, Values: *values})
			}
			if err != nil {
				return err
			}
			return printJSON(e.stdout, res)
		}
	},
}

// readBySpec reads a harness's file by the spec's mapping: what collect
// would record of a cell whose cases are ids.
func readBySpec(specPath, path string, b []byte, ids []string) (*result.Result, error) {
	src, err := sweep.ReadFile(filepath.Dir(specPath), filepath.Base(specPath), 4<<20)
	if err != nil {
		return nil, err
	}
	s, err := matrix.Parse(specPath, src)
	if err != nil {
		return nil, err
	}
	h := s.Harness
	spec := harness.Spec{}
	if h.Native != nil {
		spec.Native = render.NativeResult(h.Native)
	}
	if h.Client != nil {
		spec.Client = &sweep.ClientResult{Format: h.Client.Format, File: h.Client.File, CaseBy: h.Client.CaseBy, Values: h.Client.Values}
	}
	switch {
	case spec.Client != nil && len(ids) == 0:
		// Each run a case named line-N, as --format reads it.
		return harness.ReadCases(spec.Client.Format, path, b, nil, harness.Mapping{})
	case spec.Native != nil && len(ids) == 0:
		return nil, usagef("--cases: name the cell's cases (the native mapping reads each case's verdict and metrics)")
	case spec.File() == "":
		return nil, usagef("%s has neither harness.result nor harness.native_result", specPath)
	}
	return spec.ReadFile(path, b, sweep.Cell{Cases: ids})
}
