package analysis

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/testrun"
)

// Change is one way the two sides of a comparison differ: what the cells
// ran on (GPU, driver, CUDA, NCCL, CPU, kernel), what ran (image,
// component commits), what ran it (kvsweep, cluster, nodes) or what the
// spec said.
type Change struct {
	What      string `json:"what"`
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
}

// maxSpecChanges bounds the spec keys a comparison lists.
const maxSpecChanges = 40

// sideFacts is the set of values each fact takes over a side's cells.
type sideFacts map[string]map[string]bool

func (f sideFacts) add(what, value string) {
	if value == "" {
		return
	}
	if f[what] == nil {
		f[what] = map[string]bool{}
	}
	f[what][value] = true
}

func (f sideFacts) text(what string) string {
	if len(f[what]) == 0 {
		return "–"
	}
	return strings.Join(slices.Sorted(maps.Keys(f[what])), ", ")
}

func factsOf(runs []*testrun.Run) sideFacts {
	f := sideFacts{}
	for _, r := range runs {
		f.add("kvsweep version", r.Version)
		for _, c := range r.Cells {
			f.add("image digest", testrun.ShortDigest(c.Image.Digest))
			if rv := c.Image.SourceRevisions; rv != nil {
				for _, name := range rv.Names() {
					commit := rv.Commit(name)
					f.add("commit "+name, commit[:min(len(commit), 12)])
				}
			}
			f.add("cluster", c.Cluster)
			f.add("nodes", c.Nodes)
			if hw := c.Hardware; hw != nil {
				f.add("GPU", hw.GPUModels())
				f.add("GPU driver", hw.Driver)
				f.add("CUDA", hw.CUDA)
				f.add("NCCL", hw.NCCL)
				f.add("CPU", hw.CPU)
				f.add("kernel", hw.Kernel)
			}
		}
	}
	return f
}

// changes lists how the candidate's runs differ from the baseline's: the
// facts of every cell, then the spec key by key (the first run of each
// side; a key only one side has shows "–" on the other).
func changes(base, cand []*testrun.Run) []Change {
	bf, cf := factsOf(base), factsOf(cand)
	keys := map[string]bool{}
	for k := range bf {
		keys[k] = true
	}
	for k := range cf {
		keys[k] = true
	}
	// What the cells ran on first: another GPU or driver explains more
	// than any commit.
	hw := map[string]int{"GPU": -6, "GPU driver": -5, "CUDA": -4, "NCCL": -3, "CPU": -2, "kernel": -1}
	order := func(k string) int {
		if o, ok := hw[k]; ok {
			return o
		}
		switch {
		case k == "image digest":
			return 0
		case strings.HasPrefix(k, "commit "):
			return 1
		case k == "kvsweep version":
			return 2
		case k == "cluster":
			return 3
		}
		return 4
	}
	sorted := slices.SortedFunc(maps.Keys(keys), func(a, b string) int {
		if oa, ob := order(a), order(b); oa != ob {
			return oa - ob
		}
		return strings.Compare(a, b)
	})
	var out []Change
	for _, k := range sorted {
		if b, c := bf.text(k), cf.text(k); b != c {
			out = append(out, Change{What: k, Baseline: b, Candidate: c})
		}
	}
	if len(base) == 0 || len(cand) == 0 {
		return out
	}
	bs, cs := base[0].Spec, cand[0].Spec
	var specKeys []string
	for k := range bs {
		if v, ok := cs[k]; !ok || v != bs[k] {
			specKeys = append(specKeys, k)
		}
	}
	for k := range cs {
		if _, ok := bs[k]; !ok {
			specKeys = append(specKeys, k)
		}
	}
	slices.Sort(specKeys)
	for i, k := range specKeys {
		if i == maxSpecChanges {
			out = append(out, Change{What: "spec", Baseline: "", Candidate: fmt.Sprintf("and %d more keys", len(specKeys)-i)})
			break
		}
		b, ok := bs[k]
		if !ok {
			b = "–"
		}
		c, ok := cs[k]
		if !ok {
			c = "–"
		}
		out = append(out, Change{What: "spec " + k, Baseline: b, Candidate: c})
	}
	return out
}
