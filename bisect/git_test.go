package bisect

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ann", "GIT_AUTHOR_EMAIL=ann@example.com", "GIT_COMMITTER_NAME=Ann", "GIT_COMMITTER_EMAIL=ann@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Commits lists good..bad oldest first with subjects and authors, the
// first-parent line unless all; good must be an ancestor of bad.
func TestCommits(t *testing.T) {
	dir := t.TempDir()
	gitRun(t, dir, "init", "-q", "-b", "main")
	var shas []string
	for i := range 4 {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte{byte('a' + i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		gitRun(t, dir, "add", "f")
		gitRun(t, dir, "commit", "-q", "-m", "change "+string(rune('a'+i)))
		shas = append(shas, gitRun(t, dir, "rev-parse", "HEAD"))
	}
	// A side branch merged: one first-parent commit, two in all.
	gitRun(t, dir, "checkout", "-q", "-b", "side")
	if err := os.WriteFile(filepath.Join(dir, "g"), []byte("g"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "add", "g")
	gitRun(t, dir, "commit", "-q", "-m", "side work")
	gitRun(t, dir, "checkout", "-q", "main")
	gitRun(t, dir, "merge", "-q", "--no-ff", "-m", "merge side", "side")
	merge := gitRun(t, dir, "rev-parse", "HEAD")

	cs, err := Commits(t.Context(), dir, shas[0], "main", false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Subject)
	}
	if strings.Join(got, "|") != "change a|change b|change c|change d|merge side" || cs[4].SHA != merge || cs[0].Author != "Ann <ann@example.com>" {
		t.Errorf("first-parent: %q %+v", got, cs[0])
	}
	if all, err := Commits(t.Context(), dir, shas[0], "main", true); err != nil || len(all) != 6 {
		t.Errorf("--all: %d commits, %v", len(all), err)
	}
	if _, err := Commits(t.Context(), dir, shas[3], shas[1], false); err == nil || !strings.Contains(err.Error(), "is not an ancestor of --bad") {
		t.Errorf("good after bad: %v", err)
	}
	if _, err := Commits(t.Context(), dir, "--upload-pack=x", "main", false); err == nil || !strings.Contains(err.Error(), "no such commit") {
		t.Errorf("an option as a revision: %v", err)
	}
}
