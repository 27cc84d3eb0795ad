package main

import (
	"context"

	"github.com/kvsweep/kvsweep/sbatch"
)

// demoReport prints what the demo produced.
func demoReport(e *env, dir string) error {
	cells, _, err := sbatch.Status(context.Background(), dir, &sbatch.Local{Dir: dir})
	if err != nil {
		return err
	}
	return sbatch.WriteStatus(e.stdout, cells, "table")
}
