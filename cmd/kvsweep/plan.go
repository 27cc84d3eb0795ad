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

--argv prints each cell's harness command line instead, word by word in
the order the job passes it (harness.command, the topology's args, the
engine's args, the geometry's flags, the 2P+1D GPU map, the cases flag;
then what a two-node job adds when it runs), and the directory it runs
in; --format json gives each cell's words as "argv".

Where the jobs run an image, a last line says the platform a render pins
an image index of several platforms to, and where it comes from:
cluster.platform, or the partition's nodes as the scheduler tells them
(Slurm: each node's Arch, or a feature x86_64, amd64, aarch64 or arm64
over it; the local executor: uname -m). Nodes of two platforms are
named; render refuses them until cluster.platform is set.

A harness word made with {{.SpecDir}} must name a file that exists (it is
refused, with its place, before anything is queued); a word that is a
relative path to a file beside the spec is warned about, with the
directory the harness runs in, where it would be looked up instead.

A disagg-2p1d topology whose args map no GPUs gets the default 2P+1D map:
--gpus ` + matrix.DisaggGPUs + ` on three or more GPUs; on two, --gpus ` + matrix.DisaggSharedGPUs + `
--gpu-memory-utilization ` + matrix.DisaggSharedMemory + ` (both prefill workers share GPU 0).`,
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		format := fs.String("format", "table", "output format: table, markdown or json")
		maxArray := fs.Int("max-array-size", sweep.DefaultMaxArraySize, "split job arrays at this many tasks")
		noArray := fs.Bool("no-array", false, "one job per cell instead of job arrays")
		argv := fs.Bool("argv", false, "print each cell's harness command line, word by word")
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
			writeWarnings(e, spec.Warnings)
			if *argv && *format != "json" {
				return render.WriteArgv(e.stdout, spec, m)
			}
			if err := render.WritePlan(e.stdout, m, *format); err != nil || *format == "json" {
				return err
			}
			if err := writeLeftOut(e, spec.LeftOut); err != nil {
				return err
			}
			return writePlatform(e, spec)
		}
	},
}

// writePlatform says the platform a render pins the images to and where
// it comes from (cluster.platform, or the scheduler's nodes).
func writePlatform(e *env, spec *matrix.Spec) error {
	ctx, stop := interruptible()
	defer stop()
	if line := newLane(e).PlanPlatform(ctx, spec); line != "" {
		_, err := fmt.Fprintln(e.stdout, line)
		return err
	}
	return nil
}

// writeWarnings prints what the spec has that is likely wrong but not
// refused, each at its place.
func writeWarnings(e *env, warnings []*matrix.Error) {
	for _, w := range warnings {
		fmt.Fprintf(e.stderr, "kvsweep: warning: %s\n", w.Error())
	}
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
