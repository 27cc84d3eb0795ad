package loadsearch

import (
	"time"

	"github.com/spf13/pflag"
)

// Summary and Help are `kvsweep search`'s.
const (
	Args    = "SPEC --out DIR [--max-probes N] [--gpu-hours H]"
	Summary = "Find each cell's operating point: the highest load that meets the spec's SLOs, with a 95 % interval"
	Help    = `For each cell of the spec, the highest load of search.axis at which every
SLO of search.slo holds: steps up by doubling from search.start until an
SLO breaks (down by halving if the start breaks), then bisection until the
point is within search.step. Each round's probes of every cell run as one
sweep in DIR/round-NN, each probe search.repeats times, through the spec's
scheduler (infra failures retried under retry.infra and never read as a
breach), collected into the history store. The SLOs are judged on the
repeats' mean; the answer carries a 95 % interval and the smallest change
the repeats could detect. DIR/frontier.json is rewritten after every round
(the reports read it); --max-probes and --gpu-hours stop the search, which
says what it knows. Killed and started again with the same arguments, it
goes on with the round it was in: nothing is probed twice. See
docs/search.md.`
)

// Flags sets o from `kvsweep search`'s flags, with store the history
// store's default.
func Flags(fs *pflag.FlagSet, store string) *Options {
	o := &Options{}
	fs.StringVar(&o.Out, "out", "", "the search's directory: its state, frontier.json and a sweep per round (required)")
	fs.IntVar(&o.MaxProbes, "max-probes", 0, "stop before running more probes (cells' loads) than this (0: no limit)")
	fs.Float64Var(&o.GPUHours, "gpu-hours", 0, "stop once the probes' jobs used this many GPU-hours: GPUs of a cell times its job's wall time (0: no limit)")
	fs.StringVar(&o.Label, "label", "", "the arm the search measures, for the reports (kvcr, bare-vllm)")
	fs.StringVar(&o.Scheduler, "scheduler", "", "slurm, local or k8s (default: the spec's)")
	fs.DurationVar(&o.Interval, "interval", 10*time.Second, "time between polls of a round's sweep")
	fs.StringVar(&o.Store, "store", store, "history store the rounds are collected into: a bbolt file, or postgres://USER@HOST/DB")
	return o
}
