package matrix

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Specs built to make a parser run without end, exhaust memory or take
// minutes are refused with a positioned error, not obeyed. (Before the
// bounds, each of these ran without end or grew by gigabytes.)
func TestHostileSpecs(t *testing.T) {
	base := string(must(t, "testdata/minimal.yaml"))
	var flags []string
	for i := 0; i < 40000; i++ {
		flags = append(flags, "      k"+itoa(i)+": v")
	}
	tests := []struct{ name, src, want string }{
		{"merge key referring to itself",
			strings.Replace(base, "  aggregated:\n", "  aggregated: &t\n    <<: *t\n", 1),
			"sweep.yaml:7:9: topologies.aggregated.<<: merge keys refer to themselves or nest more than 16 deep"},
		{"deeply nested flow lists",
			strings.Replace(base, "engine: [vllm, sglang]", "engine: "+strings.Repeat("[", 5000)+strings.Repeat("]", 5000), 1),
			"sweep.yaml:12:75: collections nested more than 64 deep"},
		{"deeply nested block lists",
			strings.Replace(base, "engine: [vllm, sglang]", "engine:\n  "+strings.Repeat("- ", 5000)+"x", 1),
			"sweep.yaml:13:131: lists nested more than 64 deep on one line"},
		{"one huge mapping",
			strings.Replace(base, "    flags: {model: m}", "    flags:\n"+strings.Join(flags, "\n"), 1),
			"sweep.yaml:1:1: file is "},
		{"a NUL in a value", strings.Replace(base, "model: m", `model: "m\0x"`, 1),
			`sweep.yaml:10:20: "m\x00x" contains a NUL character`},
		{"invalid UTF-8", strings.Replace(base, "model: m", "model: m\xff", 1),
			"sweep.yaml:10:21: invalid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("sweep.yaml", []byte(tc.src))
			if err == nil {
				_, err = Expand(s)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// A byte order mark is valid YAML, as editors on some systems write it.
func TestByteOrderMark(t *testing.T) {
	src := append([]byte("\xef\xbb\xbf"), must(t, "testdata/minimal.yaml")...)
	if _, err := Parse("sweep.yaml", src); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func itoa(i int) string { return strconv.Itoa(i) }
