package main

import (
	"fmt"
	"strings"

	"github.com/kvsweep/kvsweep/lane"
)

// readBySpec prints what collect would record of one cell of the spec
// whose harness wrote b (lane.PreviewResult), saying on stderr which cell
// and mapping it read by; a planned case the file lacks, or one it
// reports that nobody planned, is an error after it.
func readBySpec(e *env, p lane.PreviewOf, b []byte) error {
	pv, err := lane.PreviewResult(p, b)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "reading %s as cell %s (cases %s) by %s\n", p.File, pv.Cell.Name, strings.Join(pv.Cell.Cases, ", "), pv.How)
	if err := printJSON(e.stdout, pv.Result); err != nil {
		return err
	}
	return lane.PlannedReported(p.File, pv.Cell.Cases, pv.Result)
}
