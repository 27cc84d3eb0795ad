package matrix

import (
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

// Cache states a case may declare (cases.ID.cache). A case that declares
// none is warm with no floor: nothing is reset before it and nothing is
// judged of its reuse.
const (
	CacheCold   = "cold"
	CacheWarm   = "warm"
	CachePrimed = "primed"
)

// CacheStates lists the states cases.ID.cache accepts.
var CacheStates = []string{CacheCold, CacheWarm, CachePrimed}

// DefaultMaxColdHitRate is the hit rate a cold case's window may show at
// most (cache.max_cold_hit_rate): 1 %.
const DefaultMaxColdHitRate = 0.01

// CacheSpec is the spec's cache section: how the jobs set the caches
// before a cold case and what a cold case's window may show.
type CacheSpec struct {
	// Reset: the job resets the engines' caches (and runs TierReset)
	// before each cold case; false leaves them as they are, and collect
	// judges the cold case by its hit rates alone.
	Reset bool
	// TierReset is the command that flushes the tier under test, word by
	// word, run before a cold case after the engines' resets.
	TierReset []string
	// MaxColdHitRate bounds a cold case's GPU-local and connector hit
	// rates.
	MaxColdHitRate float64
}

// cache reads cache: {reset, tier_reset, max_cold_hit_rate}.
func (d *decoder) cache(n ast.Node, where string) *CacheSpec {
	c := &CacheSpec{Reset: true, MaxColdHitRate: DefaultMaxColdHitRate}
	d.Fields(n, where,
		yamlpos.F("reset", func(n ast.Node, w string) { c.Reset = d.Bool(n, w) }),
		yamlpos.F("tier_reset", func(n ast.Node, w string) { c.TierReset = d.command(n, w) }),
		yamlpos.F("max_cold_hit_rate", func(n ast.Node, w string) { c.MaxColdHitRate = d.fraction(n, w) }),
	)
	return c
}

// caseCache is the fields cache, prime and min_reuse of cases.ID, and the
// check of how they go together, run once the case's keys are read.
func (d *decoder) caseCache(c *Case, where string) ([]yamlpos.Field, func()) {
	var stateN, primeN, minN ast.Node
	fields := []yamlpos.Field{
		yamlpos.F("cache", func(n ast.Node, w string) { stateN, c.Cache = n, d.oneOf(n, w, CacheStates) }),
		yamlpos.F("prime", func(n ast.Node, w string) { primeN, c.Prime = n, d.command(n, w) }),
		yamlpos.F("min_reuse", func(n ast.Node, w string) { minN, c.MinReuse = n, d.fraction(n, w) }),
	}
	check := func() {
		state := c.CacheState()
		switch {
		case primeN != nil && state != CachePrimed:
			d.Errorf(primeN, "%s.prime: a priming step on a %s case (expected cache: primed with it, or no prime)", where, state)
		case state == CachePrimed && primeN == nil:
			d.Errorf(stateN, "%s.cache: primed, but no priming step (expected prime: [COMMAND, ARG...] beside it)", where)
		}
		if minN != nil && state == CacheCold {
			d.Errorf(minN, "%s.min_reuse: a reuse floor on a cold case (a cold case is held to cache.max_cold_hit_rate; expected no min_reuse, or cache: warm or primed)", where)
		}
	}
	return fields, check
}

// CacheState is the case's declared cache state: warm when it declares
// none.
func (c *Case) CacheState() string {
	if c == nil || c.Cache == "" {
		return CacheWarm
	}
	return c.Cache
}

// command reads a command for the job to run, word by word: at least one
// word, none of them a template (the words are run as written).
func (d *decoder) command(n ast.Node, where string) []string {
	vs := d.StrList(n, where)
	if len(vs) == 0 && len(d.Errs) == 0 {
		d.Errorf(n, "%s: an empty command (expected [COMMAND, ARG...], or no %s)", where, where[strings.LastIndex(where, ".")+1:])
	}
	out := make([]string, 0, len(vs))
	for i, v := range vs {
		if strings.Contains(v.S, "{{") {
			d.ErrAt(v, "%s[%d]: %q is a template, but the job runs these words as written (expected a literal word; the job exports the cell directory as $KVSWEEP_CELL_DIR)", where, i, v.S)
		}
		out = append(out, v.S)
	}
	return out
}

// fraction reads a number from 0 to 1.
func (d *decoder) fraction(n ast.Node, where string) float64 {
	v, ok := d.Scalar(n, where)
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(v.S, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		d.ErrAt(v, "%s: %q is not a fraction (expected a number from 0 to 1, like 0.5)", where, v.S)
		return 0
	}
	return f
}
