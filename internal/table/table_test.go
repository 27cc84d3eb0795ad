package table

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// The markdown kvsweep lays out itself is tablewriter's, byte for byte.
func TestMarkdownAsTablewriter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "a", "PASS", "MISSING (TIMEOUT)", " padded ", "x\\|y", "vllm-aggregated-g0-repeat-10", "1.5", "–", "é", "two\nlines", "tab\there"}
	cell := func() string { return words[rng.IntN(len(words))] }
	for n := 0; n < 3000; n++ {
		cols := 1 + rng.IntN(5)
		header := make([]string, cols)
		for j := range header {
			header[j] = cell()
		}
		rows := make([][]string, rng.IntN(6))
		for i := range rows {
			rows[i] = make([]string, rng.IntN(cols+1))
			for j := range rows[i] {
				rows[i][j] = cell()
			}
		}
		if !plainASCII(header, rows) {
			continue
		}
		var fast, ref bytes.Buffer
		if err := writeMarkdown(&fast, header, rows); err != nil {
			t.Fatal(err)
		}
		if err := writeTablewriter(&ref, Markdown, header, rows); err != nil {
			t.Fatal(err)
		}
		if fast.String() != ref.String() {
			t.Fatalf("header %q rows %q:\nkvsweep:\n%s\ntablewriter:\n%s", header, rows, fast.String(), strings.ReplaceAll(ref.String(), " ", "·"))
		}
	}
}
