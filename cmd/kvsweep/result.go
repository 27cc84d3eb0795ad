package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/result"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

func init() { register(resultCmd) }

var resultCmd = &command{
	name:    "result",
	args:    "schema | validate FILE...",
	summary: "The result.json contract, for harness authors: its schema, and a validator",
	help: `  kvsweep result schema              prints the result.json v1 JSON Schema
  kvsweep result validate FILE...    checks files against it, as collect does

validate prints one line per file: "FILE: ok", or the first problem with
its place, "FILE:LINE:COL: at /cases/0/verdict: value must be one of ...".
It exits 1 when a file is not valid. docs/results.md has a minimal harness
in Python and in shell.`,
	subs: []*command{
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
				for _, path := range args {
					if msg := validateResult(path, *maxSize); msg != "" {
						fmt.Fprintln(e.stdout, msg)
						bad++
						continue
					}
					fmt.Fprintf(e.stdout, "%s: ok\n", path)
				}
				if bad > 0 {
					return fmt.Errorf("%d of %d file(s) are not valid result.json v1", bad, len(args))
				}
				return nil
			}
		}},
	},
}

// validateResult says what is wrong with one file, or "".
func validateResult(path string, maxSize int64) string {
	b, err := sweep.ReadFile(filepath.Dir(path), filepath.Base(path), maxSize)
	if err != nil {
		return fmt.Sprintf("%s: %v", path, err)
	}
	if _, err := result.ParseResult(b); err != nil {
		if line, col := result.Position(b, err); line > 0 {
			return fmt.Sprintf("%s:%d:%d: %v", path, line, col, err)
		}
		return fmt.Sprintf("%s: %v", path, err)
	}
	return ""
}
