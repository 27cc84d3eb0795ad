package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/internal/table"
	"github.com/kvsweep/kvsweep/sweep"
)

// PlanTotals summarises what a sweep asks of the cluster.
type PlanTotals struct {
	Cells    int     `json:"cells"`
	Arrays   int     `json:"arrays"` // job scripts, so sbatch calls at the default array size
	GPUHours float64 `json:"gpu_hours"`
}

type planRow struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Engine   string   `json:"engine"`
	Topology string   `json:"topology"`
	Geometry string   `json:"geometry"`
	Cases    []string `json:"cases"`
	Nodes    int      `json:"nodes"`
	GPUs     int      `json:"gpus_per_node"`
	Time     string   `json:"time_limit"`
	Job      string   `json:"job"`
	// Argv is the harness command line, word by word (WriteArgv).
	Argv []string `json:"argv"`
}

// WritePlan prints the cells of m as a table, a markdown table or JSON.
func WritePlan(w io.Writer, m *sweep.Manifest, format string) error {
	tot := PlanTotals{Cells: len(m.Cells), Arrays: len(m.Jobs), GPUHours: m.GPUHours()}
	rows := make([]planRow, len(m.Cells))
	for i, c := range m.Cells {
		j := m.JobByName(c.Job)
		rows[i] = planRow{ID: c.ID, Name: c.Name, Engine: c.Engine, Topology: c.Topology,
			Geometry: c.Geometry, Cases: c.Cases, Nodes: j.Res.Nodes, GPUs: j.Res.GPUsPerNode,
			Time: j.Res.TimeLimit, Job: c.Job, Argv: c.Argv}
	}
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Name    string             `json:"name"`
			Cells   []planRow          `json:"cells"`
			Totals  PlanTotals         `json:"totals"`
			Cache   *sweep.CachePlan   `json:"cache,omitempty"`
			Profile *sweep.ProfilePlan `json:"profile,omitempty"`
		}{m.Name, rows, tot, m.Cache, m.Profile})
	case "table", "markdown":
		header := []string{"id", "name", "engine", "topology", "geometry", "cases", "nodes x gpus", "time"}
		cells := make([][]string, len(rows))
		for i, r := range rows {
			cells[i] = []string{r.ID, r.Name, r.Engine, r.Topology, r.Geometry, casesText(r.Cases),
				strconv.Itoa(r.Nodes) + " x " + strconv.Itoa(r.GPUs), r.Time}
		}
		if err := table.Write(w, table.Format(format), header, cells); err != nil {
			return err
		}
		sep := "\n"
		if format == "markdown" {
			sep = "\n\n"
		}
		if _, err := fmt.Fprintf(w, "%s%d cells in %d job arrays, %.1f GPU-hours requested\n", sep[1:], tot.Cells, tot.Arrays, tot.GPUHours); err != nil {
			return err
		}
		if err := writeCachePlan(w, m, format); err != nil {
			return err
		}
		return writeProfilePlan(w, m.Profile)
	}
	return fmt.Errorf("unknown format %q (expected table, markdown or json)", format)
}

// casesText shortens a run of cases: TC-01..TC-06 when consecutive ids of
// one prefix, else the comma list.
func casesText(cases []string) string {
	if len(cases) > 2 {
		first, last := cases[0], cases[len(cases)-1]
		if p, a, ok := splitNum(first); ok {
			if q, b, ok := splitNum(last); ok && p == q && b-a == len(cases)-1 {
				consecutive := true
				for i, c := range cases {
					if r, n, ok := splitNum(c); !ok || r != p || n != a+i {
						consecutive = false
						break
					}
				}
				if consecutive {
					return first + ".." + last
				}
			}
		}
	}
	return strings.Join(cases, ",")
}

func splitNum(s string) (prefix string, n int, ok bool) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i == len(s) {
		return "", 0, false
	}
	n, err := strconv.Atoi(s[i:])
	return s[:i], n, err == nil
}
