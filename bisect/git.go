package bisect

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Commits lists the commits of the git repository repo from good to bad,
// oldest first, good and bad included: the first-parent line (the merges
// of a main branch, each a unit that was tested and landed) unless all,
// then every commit in between in topological order. good must be an
// ancestor of bad.
func Commits(ctx context.Context, repo, good, bad string, all bool) ([]Commit, error) {
	g, err := revParse(ctx, repo, good)
	if err != nil {
		return nil, fmt.Errorf("--good %s: %w", good, err)
	}
	b, err := revParse(ctx, repo, bad)
	if err != nil {
		return nil, fmt.Errorf("--bad %s: %w", bad, err)
	}
	if g == b {
		return nil, fmt.Errorf("--good and --bad are the same commit %s", g[:12])
	}
	if _, err := git(ctx, repo, "merge-base", "--is-ancestor", g, b); err != nil {
		return nil, fmt.Errorf("--good %s is not an ancestor of --bad %s in %s: a bisect searches the commits from one to the other", good, bad, repo)
	}
	args := []string{"log", "--reverse", "--format=%H%x00%s%x00%an <%ae>%x00"}
	if all {
		args = append(args, "--topo-order")
	} else {
		args = append(args, "--first-parent")
	}
	out, err := git(ctx, repo, append(args, "--end-of-options", g+".."+b)...)
	if err != nil {
		return nil, err
	}
	commits := []Commit{}
	head, err := git(ctx, repo, "log", "-1", "--format=%H%x00%s%x00%an <%ae>%x00", "--end-of-options", g)
	if err != nil {
		return nil, err
	}
	for _, o := range [][]byte{head, out} {
		f := strings.Split(strings.TrimSpace(string(o)), "\x00")
		for i := 0; i+2 < len(f); i += 3 {
			commits = append(commits, Commit{SHA: strings.TrimSpace(f[i]), Subject: f[i+1], Author: f[i+2]})
		}
	}
	if len(commits) < 2 || commits[len(commits)-1].SHA != b {
		return nil, fmt.Errorf("--bad %s is not on the first-parent line from --good %s (give --all to search every commit)", bad, good)
	}
	return commits, nil
}

// revParse is the full commit id of a revision.
func revParse(ctx context.Context, repo, rev string) (string, error) {
	out, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("no such commit in %s", repo)
	}
	return strings.TrimSpace(string(out)), nil
}

func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
