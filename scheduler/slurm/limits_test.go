package slurm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/scheduler"
)

func TestLimitsFill(t *testing.T) {
	assoc := "gpu|high|40|\nteam|gpuq||100\n"
	qos := "normal|||\nhigh|1000|2000|3000\ngpuq|5||\n"
	l := &slurmLimits{}
	l.fill(assoc, qos)
	if l.Account != "gpu" || l.QOS != "high" || l.AssocMax != 40 || l.AssocGroup != 0 || l.QOSPerUser != 1000 || l.QOSPerAccount != 2000 || l.QOSGroup != 3000 {
		t.Errorf("the first association and its default QOS: %+v", l)
	}
	l = &slurmLimits{Account: "team"}
	l.fill(assoc, qos)
	if l.QOS != "gpuq" || l.AssocGroup != 100 || l.AssocMax != 0 || l.QOSPerUser != 5 {
		t.Errorf("account team: %+v", l)
	}
	l = &slurmLimits{Account: "none", QOS: ""}
	l.fill(assoc, qos)
	if l.QOS != "normal" || l.QOSPerUser != 0 {
		t.Errorf("no association: want QOS normal without limits, got %+v", l)
	}
}

// fakeSacctmgr puts a sacctmgr on PATH that answers like the real one and
// logs each call; a slurm.conf that enforces limits; a cache directory.
// It returns the log and the configuration that names the two.
func fakeSacctmgr(t *testing.T) (string, Config) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$*" >> ` + log + `
case "$*" in
*" assoc "*) echo "gpu|gpuq|40|" ;;
*" qos "*) printf 'normal|||\ngpuq|5||\n' ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "sacctmgr"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte("MaxJobCount=4000\nAccountingStorageEnforce=associations,limits,qos\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	return log, Config{Conf: conf, PollCache: filepath.Join(dir, "cache")}
}

func calls(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// The limits one process read serve the next for LimitsMaxAge: a
// submission does not pay two slurmdbd round trips every time.
func TestLimitsSharedBetweenProcesses(t *testing.T) {
	log, cfg := fakeSacctmgr(t)
	ctx := context.Background()
	want := slurmLimits{MaxJobCount: 4000, Enforced: true, QOS: "gpuq", QOSPerUser: 5, Account: "gpu", AssocMax: 40}
	l, err := New(cfg).limitsFor(ctx, scheduler.RoomQuery{})
	if err != nil || *l != want {
		t.Fatalf("limits %+v, %v; want %+v", l, err, want)
	}
	if n := calls(t, log); n != 2 {
		t.Fatalf("the first read made %d sacctmgr calls, want 2", n)
	}
	l, err = New(cfg).limitsFor(ctx, scheduler.RoomQuery{})
	if err != nil || *l != want {
		t.Fatalf("limits from the cache %+v, %v; want %+v", l, err, want)
	}
	if n := calls(t, log); n != 2 {
		t.Errorf("a second process made %d more sacctmgr calls, want none", n-2)
	}
	// Another QOS is another entry.
	if l, err := New(cfg).limitsFor(ctx, scheduler.RoomQuery{QOS: "normal"}); err != nil || l.QOSPerUser != 0 || calls(t, log) != 4 {
		t.Errorf("QOS normal: %+v, %v after %d calls; want no per-user limit, read anew", l, err, calls(t, log))
	}

	path := New(cfg).cachePath("limits")
	if got := cachedLimits(path, "|", time.Now().Add(LimitsMaxAge)); got != nil {
		t.Errorf("an entry LimitsMaxAge old is still taken: %+v", got)
	}
	if got := cachedLimits(path, "|", time.Now().Add(-time.Hour)); got != nil {
		t.Errorf("an entry from the future is taken: %+v", got)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := New(cfg).limitsFor(ctx, scheduler.RoomQuery{}); err != nil || *l != want || calls(t, log) != 6 {
		t.Errorf("a damaged cache: %+v, %v after %d calls; want the limits read anew", l, err, calls(t, log))
	}

	cfg.PollCache = "off"
	for range 2 {
		if _, err := New(cfg).limitsFor(ctx, scheduler.RoomQuery{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls(t, log); n != 10 {
		t.Errorf("with the cache off two processes made %d calls, want 4", n-6)
	}
}
