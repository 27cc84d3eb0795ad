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

// Control characters, bidirectional overrides and invalid UTF-8 in a cell
// reach neither format raw; a table's structure stays whole.
func TestVisibleCells(t *testing.T) {
	hostile := "a\x1b]0;pwned\x07b\nc|d\re\u202ef\xff\u009b"
	want := `a\x1b]0;pwned\x07b\nc|d\re\u202ef\ufffd\x9b`
	if got := Visible(hostile); got != want {
		t.Errorf("Visible = %q, want %q", got, want)
	}
	if s := "plain ascii | and unicode é"; Visible(s) != s {
		t.Errorf("Visible changed %q", s)
	}
	for _, f := range []Format{Text, Markdown} {
		var b bytes.Buffer
		if err := Write(&b, f, []string{"name", "text"}, [][]string{{"x", hostile}, {"y", "ok"}}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, r := range out {
			if r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x202e) {
				t.Errorf("%s: a raw control character %U in\n%s", f, r, out)
			}
		}
		if lines := strings.Count(out, "\n"); lines != 4 {
			t.Errorf("%s: %d lines, want a header, its line and two rows:\n%s", f, lines, out)
		}
		if f == Markdown && !strings.Contains(out, `c\|d`) {
			t.Errorf("markdown: the pipe was not escaped:\n%s", out)
		}
	}
}
