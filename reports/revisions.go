package reports

import (
	"bytes"
	"fmt"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/testrun"
)

// writeRevisionGrid writes the revisions x cases table of a run with
// revision sets (kvsweep run --revisions), the first set that did not
// pass marked: which pull request of a stack breaks what. Nothing for a
// run without.
func writeRevisionGrid(b *bytes.Buffer, format Format, r *testrun.Run) error {
	rows, first := analysis.Revisions(r)
	if len(rows) == 0 {
		return nil
	}
	cases := testrun.CaseIDs(r)
	if format == "markdown" {
		b.WriteString("### By revision\n\n")
	}
	header := append(append([]string{"revision"}, cases...), "image", "revisions")
	var out [][]string
	for i, row := range rows {
		name := row.Revision
		if i == first {
			name += " (first failing)"
			if format == "markdown" {
				name = "**" + name + "**"
			}
		}
		line := []string{name}
		for _, id := range cases {
			line = append(line, cellOr(row.Cases[id], "-"))
		}
		out = append(out, append(line, row.Digest, row.Commits))
	}
	if err := table.Write(b, table.Format(format), header, out); err != nil {
		return err
	}
	if first >= 0 {
		fmt.Fprintf(b, "\nFirst failing revision: %s (of %d, in the order given).\n\n", rows[first].Revision, len(rows))
	} else {
		fmt.Fprintf(b, "\nEvery revision passed (%d).\n\n", len(rows))
	}
	return nil
}

func cellOr(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}
