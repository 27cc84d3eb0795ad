package matrix

import (
	"slices"
	"testing"
)

// A spec's cache section and each case's state, priming step and reuse
// floor, with the defaults of what it leaves out.
func TestCacheStates(t *testing.T) {
	src := edit(t, "name: mini", `name: mini
cache: {tier_reset: [kvcr-cli, flush, --all]}
cases:
  TC-01: {cache: cold}
  TC-02: {cache: primed, prime: [python3, prime.py, --prefix-len, "512"], min_reuse: 0.5, require: ["x > 0"]}`)
	s, cells, err := ParseCells("sweep.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 {
		t.Fatalf("got %d cells", len(cells))
	}
	c := s.Cache
	if c == nil || !c.Reset || c.MaxColdHitRate != DefaultMaxColdHitRate || !slices.Equal(c.TierReset, []string{"kvcr-cli", "flush", "--all"}) {
		t.Errorf("cache: %+v", c)
	}
	if got := s.Cases["TC-01"]; got.CacheState() != CacheCold || got.MinReuse != 0 || got.Prime != nil {
		t.Errorf("TC-01: %+v", got)
	}
	tc2 := s.Cases["TC-02"]
	if tc2.CacheState() != CachePrimed || tc2.MinReuse != 0.5 || !slices.Equal(tc2.Prime, []string{"python3", "prime.py", "--prefix-len", "512"}) || len(tc2.Require) != 1 {
		t.Errorf("TC-02: %+v", tc2)
	}
	if st := (*Case)(nil).CacheState(); st != CacheWarm {
		t.Errorf("a case with no settings is %s, want warm", st)
	}
	s, err = Parse("sweep.yaml", []byte(edit(t, "name: mini", "name: mini\ncache: {reset: false, max_cold_hit_rate: 0}\ncases: {TC-02: {min_reuse: 1}}")))
	if err != nil {
		t.Fatal(err)
	}
	if s.Cache.Reset || s.Cache.MaxColdHitRate != 0 || s.Cases["TC-02"].CacheState() != CacheWarm || s.Cases["TC-02"].MinReuse != 1 {
		t.Errorf("cache %+v, TC-02 %+v", s.Cache, s.Cases["TC-02"])
	}
}

// Cache settings that cannot mean what they say are refused at their
// place, with the value and what was expected.
func TestCacheRefusals(t *testing.T) {
	tests := []struct{ name, new, want string }{
		{"unknown state", "cases: {TC-01: {cache: hot}}",
			`sweep.yaml:3:24: cases.TC-01.cache: unknown value "hot" (expected one of: cold, warm, primed)`},
		{"prime on a warm case", "cases: {TC-01: {cache: warm, prime: [p]}}",
			`sweep.yaml:3:37: cases.TC-01.prime: a priming step on a warm case (expected cache: primed with it, or no prime)`},
		{"prime on a case with no state", "cases: {TC-01: {prime: [p]}}",
			`sweep.yaml:3:24: cases.TC-01.prime: a priming step on a warm case (expected cache: primed with it, or no prime)`},
		{"primed without prime", "cases: {TC-01: {cache: primed}}",
			`sweep.yaml:3:24: cases.TC-01.cache: primed, but no priming step (expected prime: [COMMAND, ARG...] beside it)`},
		{"min_reuse on cold", "cases: {TC-01: {cache: cold, min_reuse: 0.5}}",
			`sweep.yaml:3:41: cases.TC-01.min_reuse: a reuse floor on a cold case (a cold case is held to cache.max_cold_hit_rate; expected no min_reuse, or cache: warm or primed)`},
		{"min_reuse above 1", "cases: {TC-01: {min_reuse: 50}}",
			`sweep.yaml:3:28: cases.TC-01.min_reuse: "50" is not a fraction (expected a number from 0 to 1, like 0.5)`},
		{"min_reuse a word", "cases: {TC-01: {min_reuse: half}}",
			`sweep.yaml:3:28: cases.TC-01.min_reuse: "half" is not a fraction (expected a number from 0 to 1, like 0.5)`},
		{"max_cold_hit_rate negative", "cache: {max_cold_hit_rate: -0.1}",
			`sweep.yaml:3:28: cache.max_cold_hit_rate: "-0.1" is not a fraction (expected a number from 0 to 1, like 0.5)`},
		{"max_cold_hit_rate not a number", "cache: {max_cold_hit_rate: .nan}",
			`sweep.yaml:3:28: cache.max_cold_hit_rate: ".nan" is not a fraction (expected a number from 0 to 1, like 0.5)`},
		{"empty tier_reset", "cache: {tier_reset: []}",
			`sweep.yaml:3:21: cache.tier_reset: an empty command (expected [COMMAND, ARG...], or no tier_reset)`},
		{"empty prime", "cases: {TC-01: {cache: primed, prime: []}}",
			`sweep.yaml:3:39: cases.TC-01.prime: an empty command (expected [COMMAND, ARG...], or no prime)`},
		{"template in a command", `cache: {tier_reset: [flush, "{{.CellDir}}"]}`,
			`sweep.yaml:3:29: cache.tier_reset[1]: "{{.CellDir}}" is a template, but the job runs these words as written (expected a literal word; the job exports the cell directory as $KVSWEEP_CELL_DIR)`},
		{"reset not a boolean", "cache: {reset: sometimes}",
			`sweep.yaml:3:16: cache.reset: "sometimes" is not a boolean (expected true or false)`},
		{"unknown cache key", "cache: {flush: [x]}",
			`sweep.yaml:3:9: cache: unknown key "flush" (expected one of: reset, tier_reset, max_cold_hit_rate)`},
		{"unknown case key", "cases: {TC-01: {state: cold}}",
			`sweep.yaml:3:17: cases.TC-01: unknown key "state" (expected one of: require, cache, prime, min_reuse)`},
		{"cache state of a case no cell plans", "cases: {TC-09: {cache: cold}}",
			`sweep.yaml:3:9: cases.TC-09: no cell plans case "TC-09" (expected one of: TC-01, TC-02)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := edit(t, "name: mini", "name: mini\n"+tc.new)
			s, err := Parse("sweep.yaml", []byte(src))
			if err == nil {
				_, err = Expand(s)
			}
			if err == nil {
				t.Fatalf("no error for:\n%s", src)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error:\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}
