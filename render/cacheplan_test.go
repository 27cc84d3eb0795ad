package render

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/internal/testing/golden"
	"github.com/kvsweep/kvsweep/sweep"
)

// A spec with cache states: the manifest records the plan, and the
// plan's printout shows each case's state under the cells.
func TestCachePlanGolden(t *testing.T) {
	src, err := os.ReadFile("testdata/cache.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, m := renderSpec(t, "cache.yaml", src, Options{SweepID: "cache-states"})
	b, err := os.ReadFile(filepath.Join(dir, sweep.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Cache json.RawMessage `json:"cache"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, raw.Cache, "", "  "); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "golden", "cache-manifest.json"), append(pretty.Bytes(), '\n'))
	for _, f := range []string{"table", "markdown", "json"} {
		var out bytes.Buffer
		if err := WritePlan(&out, m, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "golden", "cache-plan."+f), out.Bytes())
	}
}

// A spec that declares no cache state renders no cache plan: its
// manifest is what it was before cache states.
func TestNoCachePlan(t *testing.T) {
	src, err := os.ReadFile("testdata/all-topologies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src = bytes.Replace(src, []byte("runtime: RUNTIME"), []byte("runtime: none"), 1)
	dir, m := renderSpec(t, "s.yaml", src, Options{SweepID: "no-cache"})
	if m.Cache != nil {
		t.Errorf("cache plan %+v for a spec without cache states", m.Cache)
	}
	b, err := os.ReadFile(filepath.Join(dir, sweep.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"cache"`) {
		t.Errorf("manifest.json has a cache member:\n%s", b)
	}
	// reset: false alone is a plan: every case warm, nothing reset.
	s, cells := load(t, "s.yaml", bytes.Replace(src, []byte("name: golden"), []byte("name: golden\ncache: {reset: false}"), 1))
	p, err := Plan(s, cells, Options{SweepID: "reset-off"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Cache == nil || p.Cache.Reset || p.Cache.Cases != nil || p.Cache.MaxColdHitRate != 0.01 {
		t.Errorf("cache plan %+v, want reset false and no cases", p.Cache)
	}
}
