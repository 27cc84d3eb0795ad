package telemetry

import (
	"fmt"
	"strings"
	"testing"
)

// derived is everything Derive gives, as text, with scanLine or with
// encoding/json alone.
func derived(b []byte, scan bool) string {
	scanLines = scan
	defer func() { scanLines = true }()
	d := DeriveWindows(b, nil)
	return fmt.Sprintf("%+v\n%+v", d.Cell, d.Summary)
}

var scanSeeds = []string{
	`{"t":1,"url":"http://a:1/metrics","role":"prefill","name":"p0","series":[{"f":"vllm:prefix_cache_hits_total","l":{"engine":"0"},"v":5},{"f":"vllm:prefix_cache_queries_total","l":{"engine":"0"},"v":10}]}` + "\n" +
		`{"t":2,"url":"http://a:1/metrics","series":[{"f":"vllm:prefix_cache_hits_total","l":{"engine":"0"},"v":8},{"f":"vllm:prefix_cache_queries_total","l":{"engine":"0"},"v":20}]}`,
	`{"t":1,"URL":"http://a:1/metrics","series":[{"f":"sglang:token_usage","v":0.5}]}`,
	`{"t":1,"url":"u","url":"v","series":[]}`,
	`{"t":1.5,"url":"u","series":[{"f":"sglang:token_usage","v":0.5}]}`,
	`{"t":1,"url":"u","series":[{"f":"sglang:token_usage","l":null,"v":0.5},{"F":"sglang:token_usage","v":0.7}]}`,
	`{"t":1,"url":"u","series":[{"f":"sglang:token_usage","l":{},"v":0.5}]}`,
	`{"t":1,"url":"u","values":{"sglang:token_usage":0.25}}`,
	`{"t":1,"url":"u","error":"connection refused"}`,
	`{"t":1,"url":"u","series":[{"f":"sglang:token_usage","l":{"tp_rank":"0","tp_rank":"1"},"v":0.5}]}`,
	`{"t":1,"url":"u\u00e9","series":[{"f":"sglang:token_usage","l":{"tp_rank":"\u0030"},"v":1e-3}],"extra":[1,{"a":2}]}`,
	`{"t":1,"url":"u","series":[{"f":"sglang:token_usage","l":{"tp_rank":0},"v":0.5}]}`,
}

// scanLine reads what encoding/json reads, to the figure and the note.
func TestScanLineAgrees(t *testing.T) {
	for _, s := range scanSeeds {
		if a, b := derived([]byte(s), true), derived([]byte(s), false); a != b {
			t.Errorf("%s:\nscanLine  %s\njson      %s", s, a, b)
		}
	}
}

func FuzzScanLine(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Count(s, "\n") > 20 {
			return
		}
		if a, b := derived([]byte(s), true), derived([]byte(s), false); a != b {
			t.Errorf("%q:\nscanLine  %s\njson      %s", s, a, b)
		}
	})
}
