package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// Leftovers are the containers a sweep's docker tasks started and never
// stopped. A task's exit trap stops its containers, but a task killed
// with SIGKILL (a node that died, the OOM killer, KillWait run out) runs
// no trap, and its containers, children of dockerd, live on. Every
// container a job starts carries the labels kvsweep.sweep and
// kvsweep.cell (templates/sbatch/launch.tmpl), so they can be found.

// RemoveLeftovers removes, from the docker daemon this machine reaches
// ($DOCKER_HOST), the containers of the cells of m that have ended
// (ended says which); a running cell's containers are its job's. It
// returns what it removed, "NAME (cell ID)". A sweep whose runtime is not
// docker has none, and a machine without docker reaches none.
func RemoveLeftovers(ctx context.Context, m *sweep.Manifest, ended func(cellID string) bool) ([]string, error) {
	if m.Runtime != "docker" {
		return nil, nil
	}
	if _, err := exec.LookPath("docker"); err != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := docker(ctx, "ps", "--all", "--no-trunc", "--filter", "label=kvsweep.sweep="+m.SweepID,
		"--format", `{{.ID}}	{{.Names}}	{{.Label "kvsweep.cell"}}`)
	if err != nil {
		return nil, err
	}
	var ids, removed []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || !ended(f[2]) {
			continue
		}
		ids = append(ids, f[0])
		removed = append(removed, fmt.Sprintf("%s (cell %s)", f[1], f[2]))
	}
	if len(ids) == 0 {
		return nil, nil
	}
	if _, err := docker(ctx, append([]string{"rm", "--force", "--"}, ids...)...); err != nil {
		return nil, err
	}
	return removed, nil
}

// docker runs the docker CLI and returns its output.
func docker(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("docker %s: no answer within 30s", args[0])
		}
		return "", fmt.Errorf("docker %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
