package shq

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// Every quoted word reads back through bash unchanged, including every
// byte value but NUL (which no argv or environment value can hold).
func TestQuoteRoundTrip(t *testing.T) {
	words := []string{"", "plain", "a b", "it's", `"`, "$x", "`x`", "\n", "a\tb", "\\", "\\'", "&", "$'x'", "é ü", "\x01\x7f\x1b[0m"}
	var all []byte
	for c := 1; c < 256; c++ {
		all = append(all, byte(c))
	}
	words = append(words, string(all))
	var script strings.Builder
	for _, w := range words {
		script.WriteString("printf '%s\\0' " + Quote(w) + "\n")
	}
	out, err := exec.Command("bash", "-c", script.String()).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := bytes.Split(out, []byte{0})
	got = got[:len(got)-1]
	if len(got) != len(words) {
		t.Fatalf("got %d words, want %d", len(got), len(words))
	}
	for i, w := range words {
		if string(got[i]) != w {
			t.Errorf("%q quoted as %s read back as %q", w, Quote(w), got[i])
		}
	}
}
