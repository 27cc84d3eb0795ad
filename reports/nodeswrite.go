package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/internal/table"
)

// WriteNodes prints the ledger as a table (markdown or plain) or JSON.
func WriteNodes(w io.Writer, format string, ledger []analysis.NodeRecord) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ledger)
	}
	rows := make([][]string, len(ledger))
	for i, n := range ledger {
		var states []string
		for _, s := range slices.Sorted(maps.Keys(n.States)) {
			states = append(states, fmt.Sprintf("%s x%d", s, n.States[s])+gpuCounters(s, n))
		}
		rows[i] = []string{n.Node, strconv.Itoa(n.Failures), strings.Join(states, ", "), strconv.Itoa(len(n.Sweeps)), n.Last.UTC().Format("2006-01-02 15:04")}
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no node had a failure outside the test in the stored runs")
		return err
	}
	return table.Write(w, table.Format(format), []string{"node", "infra failures", "states", "sweeps", "last"}, rows)
}

// gpuCounters is " (nvlink.replay_errors x2, xid x1)" after the ledger's
// GPU_FAULT state: the counters that rose on the node's GPUs.
func gpuCounters(state string, n analysis.NodeRecord) string {
	if state != analysis.GPUFault || len(n.GPUCounters) == 0 {
		return ""
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(n.GPUCounters)) {
		parts = append(parts, fmt.Sprintf("%s x%d", c, n.GPUCounters[c]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
