package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Twenty sweeps followed at once by twenty status --watch processes of
// one user on one cluster, and by one more that follows all twenty
// (status DIR... --watch), share their polls: every sacct and squeue call
// is counted by a wrapper on the followers' PATH, and the controller saw
// at most one sacct per interval the followers' calls spanned (and two
// more, for the wrapper's clock against the followers'), plus one per
// sweep followed (each asks once for jobs no answer covered yet), where
// forty unshared followers make forty per interval. Counts, not times:
// the bound is in intervals of the span the wrapper logged.
func TestSharedPolls(t *testing.T) {
	c := clusters(t)[0]
	t.Parallel()
	const followers, interval = 20, 2 * time.Second
	tmp := t.TempDir()
	log := filepath.Join(tmp, "calls.log")
	wrap := filepath.Join(tmp, "bin")
	if err := os.MkdirAll(wrap, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"sacct", "squeue"} {
		real, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		script := fmt.Sprintf("#!/bin/sh\necho \"%s $(date +%%s.%%N)\" >> %s\nexec %s \"$@\"\n", tool, log, real)
		if err := os.WriteFile(filepath.Join(wrap, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dirs := make([]string, followers)
	for i := range dirs {
		dirs[i], _ = renderSweep(t, c, fmt.Sprintf("shared%02d", i), []string{"sleep:6", "sleep:7"}, []string{"a"}, "")
		defer cancelSweep(t, c, dirs[i])
		mustKvsweep(t, c, "submit", dirs[i], "--scheduler", "slurm")
	}
	env := append(os.Environ(), append(c.env(), "PATH="+wrap+":"+os.Getenv("PATH"), "KVSWEEP_POLL_CACHE="+filepath.Join(tmp, "polls"))...)
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() {
			cmd := exec.Command(binary, "status", dir, "--watch", "--interval", interval.String(), "--scheduler", "slurm", "--quiet")
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "2 cells: 2 COMPLETED") {
				t.Errorf("follower %d: %v\n%s", i, err, out)
			}
		})
	}
	wg.Go(func() {
		cmd := exec.Command(binary, append(append([]string{"status"}, dirs...), "--watch", "--interval", interval.String(), "--scheduler", "slurm", "--quiet")...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil || strings.Count(string(out), "2 cells: 2 COMPLETED") != followers {
			t.Errorf("the follower of all %d sweeps: %v\n%s", followers, err, out)
		}
	})
	wg.Wait()
	calls := map[string][]float64{}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		tool, at, _ := strings.Cut(line, " ")
		if s, err := strconv.ParseFloat(at, 64); err == nil {
			calls[tool] = append(calls[tool], s)
		}
	}
	sacct := calls["sacct"]
	sort.Float64s(sacct)
	if len(sacct) == 0 {
		t.Fatal("no sacct call was logged")
	}
	span := sacct[len(sacct)-1] - sacct[0]
	bound := int(math.Ceil(span/interval.Seconds())) + 3 + 2*followers
	t.Logf("%d sacct and %d squeue calls over %.1f s (%d intervals of %s) for %d followers; bound %d",
		len(sacct), len(calls["squeue"]), span, int(math.Ceil(span/interval.Seconds())), interval, 2*followers, bound)
	if len(sacct) > bound || len(calls["squeue"]) > bound {
		t.Errorf("%d sacct and %d squeue calls for %d followers over %.1f s: over the shared bound %d (unshared they make %d)",
			len(sacct), len(calls["squeue"]), 2*followers, span, bound, 2*followers*int(math.Ceil(span/interval.Seconds())))
	}
}
