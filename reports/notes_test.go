package reports

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/analysis"
	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/history/bolt"
	"github.com/kvsweep/kvsweep/testrun"
)

// Notes are written to the store beside the runs, survive the run being
// collected again, and show in the history report in every format.
func TestNotesRoundTrip(t *testing.T) {
	mixed := collected(t, "mixed")
	base := collected(t, "base")
	path := filepath.Join(t.TempDir(), "history.db")
	st, err := bolt.Open(path, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*testrun.Run{mixed, base} {
		if err := st.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 12, 3, 10, 4, 0, 0, time.UTC)
	notes := []testrun.Note{
		{Sweep: "mixed-1", Author: "ana", Time: at, Text: "Guard promotion slow on node\nkvsn2; <b>workaround</b>: drain it"},
		{Sweep: "mixed-1", Cell: "vllm-aggregated-qwen3.5-4b-sim-garbage", Author: "bo", Time: at.Add(time.Minute), Text: "harness wrote a truncated file"},
	}
	for _, n := range notes {
		if err := st.AddNote(n); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []testrun.Note{
		{Sweep: "mixed-1", Author: "ana", Time: at, Text: "  "},
		{Sweep: "mixed-1", Author: "", Time: at, Text: "x"},
		{Sweep: "mixed-1", Author: "ana", Time: at, Text: strings.Repeat("x", testrun.MaxNoteSize+1)},
	} {
		if err := st.AddNote(bad); err == nil {
			t.Errorf("AddNote(%+v) accepted", bad)
		}
	}
	// Collecting the sweep again replaces the run and keeps its notes.
	if err := st.Put(mixed); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get("mixed-1")
	if err != nil || got == nil {
		t.Fatal(got, err)
	}
	if len(got.Notes) != 2 || got.Notes[0].Author != "ana" || got.Notes[1].Cell != notes[1].Cell || !got.Notes[0].Time.Equal(at) {
		t.Fatalf("notes after re-collect: %+v", got.Notes)
	}
	if b, _ := st.Get("base-1"); len(b.Notes) != 0 {
		t.Errorf("base-1 has notes: %+v", b.Notes)
	}
	st.Close()

	line := "harness wrote a truncated file (bo, 2026-12-03 10:05)"
	for _, format := range Formats {
		var b bytes.Buffer
		if err := WriteHistoryReport(&b, format, queried(t, path, history.Query{}), HistoryQuery{}); err != nil {
			t.Fatal(format, err)
		}
		out := b.String()
		switch format {
		case "json":
			var rows []analysis.HistoryRow
			if err := json.Unmarshal(b.Bytes(), &rows); err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if want := map[string]int{"mixed-1": 2, "base-1": 0}[r.Sweep]; len(r.Notes) != want {
					t.Errorf("json: %s has %d notes, want %d", r.Sweep, len(r.Notes), want)
				}
			}
		case "csv":
			recs, err := csv.NewReader(&b).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if h := recs[0]; h[len(h)-1] != "notes" {
				t.Errorf("csv header %v", h)
			}
			if !strings.Contains(out, "vllm-aggregated-qwen3.5-4b-sim-garbage: "+line) {
				t.Errorf("csv lacks the cell note:\n%s", out)
			}
		case "junit":
			if err := xml.Unmarshal(b.Bytes(), new(junitSuites)); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, `<property name="note" value="vllm-aggregated-qwen3.5-4b-sim-garbage: `+line+`">`) {
				t.Errorf("junit lacks the note property:\n%s", out)
			}
		case "html":
			if !strings.Contains(out, "<b>vllm-aggregated-qwen3.5-4b-sim-garbage</b>: harness wrote a truncated file <small>(bo, 2026-12-03 10:05)</small>") ||
				!strings.Contains(out, "&lt;b&gt;workaround&lt;/b&gt;") {
				t.Errorf("html lacks the notes, or did not escape them:\n%s", out)
			}
		default:
			if !strings.Contains(out, "- vllm-aggregated-qwen3.5-4b-sim-garbage: "+line) ||
				!strings.Contains(out, "- Guard promotion slow on node kvsn2; <b>workaround</b>: drain it (ana, 2026-12-03 10:04)") {
				t.Errorf("%s lacks the notes:\n%s", format, out)
			}
		}
	}

	// A filter that drops the noted cell drops its note, not the run's.
	var b bytes.Buffer
	q := history.Query{Filters: []history.Filter{{Key: "sim", Value: "pass"}}}
	if err := WriteHistoryReport(&b, "json", queried(t, path, q), HistoryQuery{Filters: []string{"sim=pass"}}); err != nil {
		t.Fatal(err)
	}
	var rows []analysis.HistoryRow
	if err := json.Unmarshal(b.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || len(rows[0].Notes) != 1 || rows[0].Notes[0].Cell != "" {
		t.Errorf("filtered history notes: %+v", rows)
	}
}

// queried is the runs of the store at path that q selects, as kvsweep
// report --history reads them.
func queried(t *testing.T, path string, q history.Query) []*testrun.Run {
	t.Helper()
	st, err := bolt.Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}
