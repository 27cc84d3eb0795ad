package lane

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/reports"
	"github.com/kvsweep/kvsweep/sweep"
	"github.com/kvsweep/kvsweep/testrun"
)

// The files WriteCI writes into the sweep directory unless told where.
const (
	SummaryFile = "summary.md"
	JUnitFile   = "junit.xml"
)

// Judging is how a run is judged: its baseline, the thresholds of a
// regression and the gates.
type Judging struct {
	// Baseline is a selection of stored runs, "auto" (the newest stored
	// run of the spec's name on BaselineRef), or "none".
	Baseline, BaselineRef string
	Threshold             string
	PerMetric             []string
	Gates                 analysis.Gates
}

// Verdict is a run judged: its comparison with the baseline (nil without
// one) and the gates' refusal (nil when every gate holds).
type Verdict struct {
	Comparison *analysis.Comparison
	Gates      error
}

// Judge compares the run with its baseline and holds it to the gates.
func (l *Lane) Judge(run *testrun.Run, j *Judging) (*Verdict, error) {
	cmp, err := l.compare(run, j)
	if err != nil {
		return nil, err
	}
	return &Verdict{Comparison: cmp, Gates: analysis.Check([]*testrun.Run{run}, cmp, j.Gates)}, nil
}

// compare picks the baseline and compares the run with it; nil without one.
func (l *Lane) compare(run *testrun.Run, j *Judging) (*analysis.Comparison, error) {
	var base []*testrun.Run
	label := j.Baseline
	h := history.OpenLazy(l.Submit.Store, true)
	defer h.Close()
	switch j.Baseline {
	case "none", "":
		return nil, nil
	case "auto":
		b, err := history.Latest(h, run.Name, j.BaselineRef, run.ID)
		if err != nil {
			return nil, err
		}
		if b == nil {
			fmt.Fprintf(l.Stderr, "kvsweep ci: no stored run of %s on %s to compare with (a first run); reporting this run alone\n", run.Name, j.BaselineRef)
			return nil, nil
		}
		base, label = []*testrun.Run{b}, b.ID+" ("+j.BaselineRef+")"
	default:
		var err error
		if base, err = history.SelectRuns(h, j.Baseline); err != nil {
			return nil, err
		}
	}
	opts, err := analysis.ParseThresholds(j.Threshold, j.PerMetric)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(l.Stderr, "kvsweep ci: comparing with %s\n", label)
	return analysis.Compare(label, base, run.ID, []*testrun.Run{run}, opts), nil
}

// CI is what a CI job keeps of a run: the step summary (appended), the
// JUnit file, the logs of the cells that did not pass and their evidence.
type CI struct {
	// Summary and JUnit are the files written ("": SummaryFile and
	// JUnitFile in the sweep directory).
	Summary, JUnit string
	// LogLines of each log of at most LogCells failing cells go to the
	// lane's Stdout.
	LogLines, LogCells int
	// Artifacts, when set, is where the evidence and logs of the cells
	// that did not pass are copied, ArtifactsMB MiB at most.
	Artifacts   string
	ArtifactsMB int64
}

// WriteCI is a CI job's end of the lane: it shows the log tails of the
// cells that did not pass and gathers their artifacts, judges the run
// (Judge), and writes the step summary (the verdict's line first, then
// the comparison) and the JUnit file (the run's cases and the
// comparison's, failing where the gates do). The verdict is returned
// whether or not the gates hold.
func (l *Lane) WriteCI(dir string, run *testrun.Run, j *Judging, c *CI) (*Verdict, error) {
	l.showLogs(dir, run, c)
	l.gather(run, c)
	v, err := l.Judge(run, j)
	if err != nil {
		return nil, err
	}
	parts := [][]byte{[]byte(reports.GatesLine(v.Gates, alone(v, j)))}
	if v.Comparison != nil {
		var b bytes.Buffer
		if err := reports.WriteComparison(&b, "markdown", v.Comparison); err != nil {
			return nil, err
		}
		parts = append(parts, b.Bytes())
	}
	var b bytes.Buffer
	if err := reports.WriteSummary(&b, "markdown", run); err != nil {
		return nil, err
	}
	parts = append(parts, b.Bytes())
	if err := appendSummary(orIn(dir, c.Summary, SummaryFile), parts); err != nil {
		return nil, err
	}
	var x bytes.Buffer
	if err := reports.WriteCIJUnit(&x, run, v.Comparison, v.Gates); err != nil {
		return nil, err
	}
	return v, os.WriteFile(orIn(dir, c.JUnit, JUnitFile), x.Bytes(), 0o644)
}

// alone says why a verdict compared nothing ("" when it compared): no
// run on the baseline ref yet, or no baseline asked for.
func alone(v *Verdict, j *Judging) string {
	switch {
	case v.Comparison != nil:
		return ""
	case j.Baseline == "auto":
		return "No baseline on " + j.BaselineRef + ": this run is reported alone"
	}
	return "No baseline (--baseline none): this run is reported alone"
}

// orIn is path, or name in dir when path is empty.
func orIn(dir, path, name string) string {
	if path == "" {
		return filepath.Join(dir, name)
	}
	return path
}

// appendSummary appends the parts to the step summary, fitted under its
// limit.
func appendSummary(path string, parts [][]byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if err := reports.WriteStepSummary(f, parts...); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// gather copies the evidence and logs of the cells that did not pass
// into c.Artifacts, for the workflow to upload; a failure to is said, and
// judges nothing.
func (l *Lane) gather(run *testrun.Run, c *CI) {
	if c.Artifacts == "" {
		return
	}
	g, err := run.GatherArtifacts(c.Artifacts, c.ArtifactsMB<<20)
	if err != nil {
		fmt.Fprintf(l.Stderr, "kvsweep ci: gathering the artifacts into %s: %v\n", c.Artifacts, err)
		return
	}
	fmt.Fprintf(l.Stderr, "kvsweep ci: %d file(s) (%s) of the %d cell(s) that did not pass gathered into %s", g.Files, sweep.Size(g.Bytes), g.Cells, c.Artifacts)
	if len(g.LeftOut) > 0 {
		fmt.Fprintf(l.Stderr, "; %d left out (%s lists them)", len(g.LeftOut), filepath.Join(c.Artifacts, "ARTIFACTS.txt"))
	}
	fmt.Fprintln(l.Stderr)
}

// showLogs prints the log tails of the cells that did not pass, one
// ::group:: each (GitHub folds them).
func (l *Lane) showLogs(dir string, run *testrun.Run, c *CI) {
	shown := 0
	for _, cell := range run.Cells {
		if cell.Outcome == testrun.OK && cell.Class == "" {
			continue
		}
		if shown == c.LogCells {
			fmt.Fprintf(l.Stdout, "kvsweep ci: logs of further failing cells left out (--log-cells %d); kvsweep logs %s CELL shows them\n", c.LogCells, dir)
			return
		}
		shown++
		fmt.Fprintf(l.Stdout, "::group::cell %s (%s): %s\n", cell.Name, cell.CellID, testrun.OutcomeText(cell))
		WriteLogTails(l.Stdout, dir, cell.CellID, c.LogLines)
		fmt.Fprintln(l.Stdout, "::endgroup::")
	}
}
