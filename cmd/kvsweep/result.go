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
	"github.com/kvsweep/kvsweep/lane"
	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

func init() { register(resultCmd) }

var resultCmd = &command{
	name:    "result",
	args:    "schema | validate FILE... | read (--format FORMAT | --spec SPEC) FILE",
	summary: "The result.json contract, for harness authors: its schema, and a validator",
	help: `  kvsweep result schema              prints the result.json v1 JSON Schema
  kvsweep result validate FILE...    checks files against it, as collect does
  kvsweep result read --format vllm-bench bench.json
                                     what collect records from a benchmark
                                     client's file (harness.result)
  kvsweep result read --spec spec.yaml bench.jsonl
                                     what collect records of a cell of the
                                     spec: its mapping (case_by), planned
                                     cases and validity rules applied

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
					if msgs, err := harness.Validate(path, *maxSize); err != nil {
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

var resultReadCmd = &command{
	name: "read", args: "(--format FORMAT | --spec SPEC [--cell CELL]) [--cases ID,...] [--case-by BY] [--value ID=VALUE]... FILE",
	summary: "Print what collect records from a benchmark client's output file",
	help: `Reads FILE as collect reads a cell's harness.result file of FORMAT
(vllm-bench, sglang-bench, aiperf, inference-perf, inference-perf-prometheus)
and prints, as JSON, the cases with their verdicts and metrics in kvsweep's
names and units: a harness author checks a mapping without running a sweep.
The files carry no verdict: a run that completed requests is a PASS for the
spec's validity rules to judge, one that completed none a FAIL. Without
--cases each run is a case named line-N. docs/results.md has each format's
table of source keys.

--spec SPEC previews what collect would record of one cell of SPEC: FILE is
read by the spec's harness.result (its format, case_by and values) or
harness.native_result, or as result.json when the spec names neither; the
cases are the cell's, as the spec plans them (--cell NAME or ID, as kvsweep
plan lists them; default the first cell), or --cases; and the spec's
validity rules of each case and of the cell's topology turn a PASS that
breaks one into INVALID, as collect does. A planned case FILE does not
report, or a case it reports that nobody planned, is an error (exit 1)
naming both lists. --case-by and --value go with --format only.`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		format := fs.String("format", "", "the client's format")
		specPath := fs.String("spec", "", "read FILE as collect would for a cell of this spec")
		cell := fs.String("cell", "", "with --spec: the cell (its name or id; default the spec's first)")
		cases := fs.StringSlice("cases", nil, "the cell's case ids (with --spec, default the cell's planned cases)")
		by := fs.String("case-by", harness.ByLine, "with --format: line, tag, request_rate or max_concurrency")
		values := fs.StringToString("value", nil, "with --format: ID=VALUE, the request rate or concurrency of a case's run (repeatable)")
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
			if *specPath == "" && *cell != "" {
				return usagef("--cell goes with --spec")
			}
			b, err := sweep.ReadFile(filepath.Dir(path), filepath.Base(path), *maxSize)
			if err != nil {
				return err
			}
			if *specPath != "" {
				return readBySpec(e, lane.PreviewOf{Spec: *specPath, Cell: *cell, File: path, Cases: *cases}, b)
			}
			res, err := harness.ReadCases(*format, path, b, *cases, harness.Mapping{By: *by, Values: *values})
			if err != nil {
				return err
			}
			return printJSON(e.stdout, res)
		}
	},
}
