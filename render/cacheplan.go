package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/internal/shq"
	"github.com/kvsweep/kvsweep/matrix"
	"github.com/kvsweep/kvsweep/sweep"
)

// CachePlan is the manifest's cache plan from the spec's cache section and
// its cases' states: nil when the spec has no cache section and no case
// declares a state or a floor, so the manifests of such specs stay as
// they were.
func CachePlan(spec *matrix.Spec) *sweep.CachePlan {
	p := &sweep.CachePlan{Reset: true, MaxColdHitRate: matrix.DefaultMaxColdHitRate}
	if c := spec.Cache; c != nil {
		p.Reset, p.TierReset, p.MaxColdHitRate = c.Reset, c.TierReset, c.MaxColdHitRate
	}
	for id, c := range spec.Cases {
		if c.Cache == "" && c.MinReuse == 0 {
			continue
		}
		if p.Cases == nil {
			p.Cases = map[string]sweep.CaseCache{}
		}
		p.Cases[id] = sweep.CaseCache{State: c.CacheState(), Prime: c.Prime, MinReuse: c.MinReuse}
	}
	if spec.Cache == nil && p.Cases == nil {
		return nil
	}
	return p
}

// writeCachePlan prints the cache plan under the plan's cells: how a cold
// case is reset, then each case that declares a state (markdown: as a
// list).
func writeCachePlan(w io.Writer, m *sweep.Manifest, format string) error {
	p := m.Cache
	if p == nil {
		return nil
	}
	item := "  "
	if format == "markdown" {
		item = "- "
	}
	reset := "the job resets the engines' caches before a cold case"
	if len(p.TierReset) > 0 {
		reset += ", then runs " + shq.Join(p.TierReset)
	}
	if !p.Reset {
		reset = "nothing is reset before a cold case (cache.reset: false)"
	}
	lines := []string{fmt.Sprintf("\ncache states: %s; a cold case may show a hit rate of at most %g", reset, p.MaxColdHitRate)}
	if format == "markdown" {
		lines = append(lines, "")
	}
	planned := map[string]bool{}
	for _, c := range m.Cells {
		for _, id := range c.Cases {
			planned[id] = true
		}
	}
	for id := range p.Cases {
		planned[id] = true
	}
	for _, id := range slices.Sorted(maps.Keys(planned)) {
		text := "warm, no floor (declares no state)"
		if c, ok := p.Cases[id]; ok {
			text = caseCacheText(c)
		}
		lines = append(lines, item+id+": "+text)
	}
	_, err := fmt.Fprintln(w, strings.Join(lines, "\n"))
	return err
}

// caseCacheText is a case's cache state in words: "cold", "warm, reuse
// >= 0.5", "primed by python3 prime.py, reuse >= 0.5".
func caseCacheText(c sweep.CaseCache) string {
	s := c.State
	if c.State == sweep.CachePrimed {
		s += " by " + shq.Join(c.Prime)
	}
	if c.MinReuse > 0 {
		s += fmt.Sprintf(", reuse >= %g", c.MinReuse)
	}
	return s
}
