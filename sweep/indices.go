package sweep

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The journal records which cell-table indices a submission covers in
// Slurm's --array syntax, which is also how they reach sbatch.

// MaxIndices bounds what ParseIndices expands, so a hostile journal line
// cannot make kvsweep allocate without limit.
const MaxIndices = 1 << 22

// FormatIndices writes sorted, distinct indices in Slurm's --array syntax,
// collapsing runs: [0 1 2 3 7 9 10] -> "0-3,7,9-10".
func FormatIndices(idx []int) string {
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	return b.String()
}

// ParseIndices reads Slurm's array syntax: "0-3,7,9-10", "1-9:2" (step),
// with an optional "%N" throttle, which is ignored. The result is sorted.
func ParseIndices(s string) ([]int, error) {
	if i := strings.IndexByte(s, '%'); i >= 0 {
		s = s[:i]
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		step := 1
		if i := strings.IndexByte(part, ':'); i >= 0 {
			n, err := strconv.Atoi(part[i+1:])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("bad array step in %q", s)
			}
			step, part = n, part[:i]
		}
		lo, hi := part, part
		if i := strings.IndexByte(part, '-'); i >= 0 {
			lo, hi = part[:i], part[i+1:]
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("bad array range %q in %q", part, s)
		}
		if (b-a)/step+1 > MaxIndices-len(out) {
			return nil, fmt.Errorf("array %q names more than %d indices", s, MaxIndices)
		}
		for k := a; k <= b; k += step {
			out = append(out, k)
		}
	}
	sort.Ints(out)
	return out, nil
}
