package gpuhealth

import (
	"context"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/internal/fail"
)

// Args and Summary are kvsweep job health's usage line and summary.
const (
	Args    = "--out FILE [--before FILE --fault FILE --log FILE] [--node N --job ID --gpus LIST]"
	Summary = "Snapshot this node's GPU health counters; with --before, record the faults since"
)

// Flags declares kvsweep job health's flags on fs and returns what the
// command does with them; a call without --out is a usage error.
func Flags(fs *pflag.FlagSet) func(ctx context.Context, w io.Writer) error {
	out, before := fs.String("out", "", "the snapshot file (required)"), fs.String("before", "", "the first snapshot, to compare with")
	fault, log := fs.String("fault", "", "where the faults since --before go"), fs.String("log", "", "the file each fault is appended to")
	node, job := fs.String("node", "", "this node's name"), fs.String("job", "", "the job's id")
	gpus := fs.String("gpus", "", "the job's GPUs, as CUDA_VISIBLE_DEVICES (default: all of the node's)")
	return func(ctx context.Context, w io.Writer) error {
		if *out == "" {
			return fail.Usagef("--out FILE is required")
		}
		o := Options{SMI: os.Getenv("KVSWEEP_NVIDIA_SMI"), Dmesg: os.Getenv("KVSWEEP_DMESG"), Node: *node, JobID: *job, Visible: *gpus}
		return Job(ctx, o, *out, *before, *fault, *log, w)
	}
}
