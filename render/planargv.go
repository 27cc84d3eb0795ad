package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/internal/shq"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/sweep"
)

// JobArgs are the words a cell's job adds after its harness argv when it
// runs, which the render cannot know: on a two-node topology, --gpus from
// its placement and --remote-worker INDEX=URL for each worker on the
// second node, the URL its node agent answers on. None for other kinds.
func JobArgs(spec *matrix.Spec, topology string) []string {
	t := spec.Topologies[topology]
	if t == nil || t.Kind != "two-node" {
		return nil
	}
	var out []string
	if t.Placement != nil && t.Placement.GPUs != nil {
		gpus := make([]string, len(t.Placement.GPUs))
		for i, g := range t.Placement.GPUs {
			gpus[i] = strconv.Itoa(g)
		}
		out = append(out, "--gpus", strings.Join(gpus, ","))
	}
	for _, w := range t.Placement.WorkersOn("remote") {
		out = append(out, "--remote-worker", strconv.Itoa(w)+"=$KVSWEEP_AGENT_URL")
	}
	return out
}

// WriteArgv prints each cell's harness command line as its job passes it:
// the words in order, each quoted for bash so that a space or a quote in a
// word shows, then what the job adds when it runs (JobArgs), and where the
// harness starts.
func WriteArgv(w io.Writer, spec *matrix.Spec, m *sweep.Manifest) error {
	_, err := fmt.Fprintf(w, "the harness of each cell, word by word (quoted for bash; %s is the cell directory when the job runs), run in %s:\n",
		matrix.CellDirToken, spec.HarnessWorkdir())
	if err != nil {
		return err
	}
	for _, c := range m.Cells {
		line := shq.Join(c.Argv)
		if extra := JobArgs(spec, c.Topology); len(extra) > 0 {
			line += "   # then, when the job runs: " + strings.Join(extra, " ")
		}
		if _, err := fmt.Fprintf(w, "%s %s\n  %s\n", c.ID, c.Name, line); err != nil {
			return err
		}
	}
	return nil
}
