package analysis

import (
	"cmp"
	"slices"
	"time"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/testrun"
)

// NodeRecord is one node of the bad-node ledger: the failures outside the
// test that attempts on it had, across the stored runs.
type NodeRecord struct {
	Node     string         `json:"node"`
	Failures int            `json:"infra_failures"`
	States   map[string]int `json:"states"` // NODE_FAIL: 2, ...
	Sweeps   []string       `json:"sweeps"`
	Last     time.Time      `json:"last"` // collection time of the newest run with one
	// GPUCounters counts, over the failures where the node's GPUs failed
	// under the cell (state GPUFault), each counter that rose
	// ("nvlink.replay_errors": 2, "xid": 1).
	GPUCounters map[string]int `json:"gpu_counters,omitempty"`
}

// GPUFault is the ledger's state of an attempt whose GPUs failed under
// it (an Xid, NVLink errors, ...), whatever the scheduler said of it.
const GPUFault = "GPU_FAULT"

// BadNodes is the ledger of runs collected since since (zero: all):
// nodes with at least one infra failure, most failures first. A
// multi-node job's failure is counted against its whole node list, since
// which node failed it is not known; a GPU fault is counted against the
// node whose GPUs failed, with the counters that rose.
func BadNodes(runs []*testrun.Run, since time.Time) []NodeRecord {
	recs := map[string]*NodeRecord{}
	add := func(r *testrun.Run, nodes, state string, counters []string) {
		if nodes == "" {
			return
		}
		n := recs[nodes]
		if n == nil {
			n = &NodeRecord{Node: nodes, States: map[string]int{}}
			recs[nodes] = n
		}
		n.Failures++
		n.States[cmp.Or(state, "UNKNOWN")]++
		for _, c := range counters {
			if n.GPUCounters == nil {
				n.GPUCounters = map[string]int{}
			}
			n.GPUCounters[c]++
		}
		if !slices.Contains(n.Sweeps, r.ID) {
			n.Sweeps = append(n.Sweeps, r.ID)
		}
		if r.CollectedAt.After(n.Last) {
			n.Last = r.CollectedAt
		}
	}
	for _, r := range runs {
		if r.CollectedAt.Before(since) {
			continue
		}
		for _, c := range r.Cells {
			for _, a := range c.Earlier {
				switch f := a.GPUFault; {
				case f != nil:
					add(r, cmp.Or(f.Node, a.Nodes), GPUFault, f.Counters())
				case a.Class == testrun.ClassInfra:
					add(r, a.Nodes, a.State, nil)
				}
			}
			// A cell still queued or running when collected (stored so
			// by an older kvsweep) did not fail on its node.
			switch h := c.Health; {
			case c.Class != testrun.ClassInfra || c.Outcome == testrun.OK || testrun.Unfinished(c.State):
				// no failure on its node
			case h != nil && len(h.Faults()) > 0:
				add(r, cmp.Or(h.Node, c.Nodes), GPUFault, h.Counters())
			default:
				add(r, c.Nodes, c.State, nil)
			}
		}
	}
	out := make([]NodeRecord, 0, len(recs))
	for _, n := range recs {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b NodeRecord) int {
		return cmp.Or(cmp.Compare(b.Failures, a.Failures), cmp.Compare(a.Node, b.Node))
	})
	return out
}

// Exclusions is the nodes of the ledger with at least min failures.
func Exclusions(ledger []NodeRecord, min int) []string {
	var out []string
	for _, n := range ledger {
		if n.Failures >= min {
			out = append(out, n.Node)
		}
	}
	return out
}

// LedgerFromStore reads the ledger of the runs in the store h that were
// collected within window of now (0: all): the store selects the runs
// and cells with a failure outside the test. No store yet is an empty
// ledger.
func LedgerFromStore(h history.History, window time.Duration, now time.Time) ([]NodeRecord, error) {
	var since time.Time
	if window > 0 {
		since = now.Add(-window)
	}
	if history.Missing(h) {
		return BadNodes(nil, since), nil
	}
	runs, err := h.Query(history.Query{CollectedSince: since, InfraFailures: true})
	if err != nil {
		return nil, err
	}
	return BadNodes(runs, since), nil
}
