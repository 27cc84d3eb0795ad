package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/render"
	"github.com/kvsweep/kvsweep/sweep"
)

func init() { register(planCmd) }

var planCmd = &command{
	name:    "plan",
	args:    "SPEC",
	summary: "Show the cells a sweep spec expands to, with totals",
	help: `Expands SPEC (see docs/spec.md) and prints one row per cell: its stable id,
name, engine, topology, geometry, cases, nodes x GPUs and time limit, then
the number of cells, job arrays and GPU-hours requested. Nothing is written.

A disagg-2p1d topology whose args map no GPUs gets the default 2P+1D map:
--gpus ` + matrix.DisaggGPUs + ` on three or more GPUs; on two, --gpus ` + matrix.DisaggSharedGPUs + `
--gpu-memory-utilization ` + matrix.DisaggSharedMemory + ` (both prefill workers share GPU 0).`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		format := fs.String("format", "table", "output format: table, markdown or json")
		maxArray := fs.Int("max-array-size", sweep.DefaultMaxArraySize, "split job arrays at this many tasks")
		noArray := fs.Bool("no-array", false, "one job per cell instead of job arrays")
		return func(e *env, args []string) error {
			path, err := oneArg(args, "the spec file")
			if err != nil {
				return err
			}
			if err := oneOf("format", *format, "table", "markdown", "json"); err != nil {
				return err
			}
			spec, cells, _, err := matrix.LoadCells(path)
			if err != nil {
				return err
			}
			m, err := render.Plan(spec, cells, render.Options{MaxArraySize: *maxArray, NoArray: *noArray, SweepID: "plan"})
			if err != nil {
				return err
			}
			if err := render.WritePlan(e.stdout, m, *format); err != nil || *format == "json" {
				return err
			}
			return writeLeftOut(e, spec.LeftOut)
		}
	},
}

// writeLeftOut says what the grid asked of engines that do not support it
// (engines.NAME.unsupported), and so left out.
func writeLeftOut(e *env, left []matrix.LeftOut) error {
	if len(left) == 0 {
		return nil
	}
	n := 0
	parts := make([]string, len(left))
	for i, l := range left {
		n += l.Combinations
		parts[i] = fmt.Sprintf("%s %s (%d)", l.Engine, l.What, l.Combinations)
	}
	_, err := fmt.Fprintf(e.stdout, "left out: %d combination(s) their engine does not support: %s\n", n, strings.Join(parts, ", "))
	return err
}
