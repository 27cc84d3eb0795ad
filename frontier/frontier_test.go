package frontier

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	in := &Frontier{Name: "s", Axis: Rate, Repeats: 3,
		SLO: []SLO{{Metric: TTFTP99, Max: 500}},
		Cells: []Cell{{ID: "c1", Probes: []Probe{{Round: 1, Load: 4, Meets: true,
			Repeats: []Repeat{{Run: "r1", Cell: "c1", Verdict: "PASS", Figures: map[string]float64{TTFTP99: 120}}}}},
			Point: &Point{Load: 4, Low: 4, High: 8}}}}
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, FileName)); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("%s: mode %v (%v), want -rw-r--r-- as the search's other files", FileName, st.Mode(), err)
	}
	out, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("read back %+v, wrote %+v", out, in)
	}
}

func TestReadRefuses(t *testing.T) {
	for name, setup := range map[string]func(dir string) error{
		"a link": func(dir string) error {
			target := filepath.Join(t.TempDir(), "x.json")
			if err := os.WriteFile(target, []byte(`{"version":1}`), 0o644); err != nil {
				return err
			}
			return os.Symlink(target, filepath.Join(dir, FileName))
		},
		"version 2": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, FileName), []byte(`{"version":2}`), 0o644)
		},
		"over the size bound": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, FileName), []byte(`{"name":"`+strings.Repeat("x", MaxFileBytes)+`"}`), 0o644)
		},
	} {
		dir := t.TempDir()
		if err := setup(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(dir); err == nil {
			t.Errorf("%s: read, want a refusal", name)
		}
	}
}
