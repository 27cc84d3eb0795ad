package matrix

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/spec.md documents every key the decoder accepts. The keys are read
// from the decoder itself: an unknown key at each level makes it list them.
func TestSpecDocCoversEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/spec.md")
	if err != nil {
		t.Fatal(err)
	}
	levels := map[string][2]string{
		"top":       {"version: 1", "version: 1\nzz_unknown: 1"},
		"topology":  {"    resources: {gpus_per_node: 2, time: 30m}", "    resources: {gpus_per_node: 2, time: 30m}\n    zz_unknown: 1"},
		"resources": {"{gpus_per_node: 2, time: 30m}", "{gpus_per_node: 2, time: 30m, zz_unknown: 1}"},
		"geometry":  {"flags: {model: m}", "flags: {model: m}\n    zz_unknown: 1"},
		"harness":   {"  command: [", "  zz_unknown: 1\n  command: ["},
		"cluster":   {"version: 1", "version: 1\ncluster: {zz_unknown: 1}"},
		"container": {"version: 1", "version: 1\ncontainer: {zz_unknown: 1}"},
		"env":       {"version: 1", "version: 1\nenv: {zz_unknown: 1}"},
	}
	listRE := regexp.MustCompile(`expected one of: ([a-z_, ]+)\)`)
	for level, e := range levels {
		_, err := Parse("s.yaml", []byte(edit(t, e[0], e[1])))
		if err == nil {
			t.Fatalf("%s: unknown key accepted", level)
		}
		m := listRE.FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("%s: no key list in %q", level, err)
		}
		for _, key := range strings.Split(m[1], ", ") {
			if !strings.Contains(string(doc), "`"+key+"`") && !strings.Contains(string(doc), "."+key+"`") {
				t.Errorf("docs/spec.md does not document %s key %q", level, key)
			}
		}
	}
}
