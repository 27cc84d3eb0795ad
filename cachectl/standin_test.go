package cachectl

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// standin starts e2e/testdata/vllm_cache_standin.py (a vLLM server whose
// prefix cache persists until /reset_prefix_cache) and returns its URL.
func standin(t *testing.T, devMode bool, flags ...string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 for the stand-in vLLM server")
	}
	dir := t.TempDir()
	cmd := exec.Command(py, append(append([]string{"../e2e/testdata/vllm_cache_standin.py"}, flags...), dir)...)
	cmd.Env = append(os.Environ(), "VLLM_SERVER_DEV_MODE=0")
	if devMode {
		cmd.Env = append(cmd.Env, "VLLM_SERVER_DEV_MODE=1")
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(dir, "port")); err == nil {
			return "http://127.0.0.1:" + string(b)
		}
	}
	t.Fatal("the stand-in wrote no port in 2 minutes")
	return ""
}

// complete sends the prompt and returns the cached tokens the server
// reports.
func complete(t *testing.T, base, prompt string) int {
	t.Helper()
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(fmt.Sprintf(`{"prompt": %q}`, prompt)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text())
	}
	_, after, _ := strings.Cut(b.String(), `"cached_tokens": `)
	n, err := strconv.Atoi(strings.TrimRight(after, "}"))
	if err != nil {
		t.Fatalf("%s: %v", b.String(), err)
	}
	return n
}

func counter(t *testing.T, base, name string) float64 {
	t.Helper()
	m, err := Options{Client: http.DefaultClient}.scrape(context.Background(), base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return m.sum[name]
}

// Against the stand-in vLLM server: its cache persists across requests
// (the warm case's prompts hit in the next case, vllm #52884) until a
// cold case's start resets it; without VLLM_SERVER_DEV_MODE the route is
// missing (404) and a server whose reset fails answers 500: each a failed
// step.
func TestStandinVLLM(t *testing.T) {
	base := standin(t, true)
	prompt := strings.Repeat("shared prefix words ", 32)
	if a, b := complete(t, base, prompt), complete(t, base, prompt); a != 0 || b != 96 {
		t.Fatalf("cached tokens %d then %d, want 0 then 96 (6 full blocks of 16)", a, b)
	}
	o := cell(t, coldPlan(), base+"/metrics")
	l := startLine(t, o, "TC-02")
	if len(l.Steps) != 1 || !l.Steps[0].OK || l.Error != "" {
		t.Fatalf("%+v", l)
	}
	hits := counter(t, base, "vllm:prefix_cache_hits_total")
	if n := complete(t, base, prompt); n != 0 || counter(t, base, "vllm:prefix_cache_hits_total") != hits {
		t.Fatalf("after the reset the prompt still hit %d tokens", n)
	}
	for _, c := range []struct {
		dev   bool
		flags []string
		want  string
	}{{false, nil, "404: the server has no /reset_prefix_cache"}, {true, []string{"--fail-reset"}, "500 Internal Server Error"}} {
		base := standin(t, c.dev, c.flags...)
		complete(t, base, prompt)
		o := cell(t, coldPlan(), base+"/metrics")
		l := startLine(t, o, "TC-02")
		if len(l.Steps) != 1 || l.Steps[0].OK || !strings.Contains(l.Error, c.want) {
			t.Fatalf("%+v, want %q", l, c.want)
		}
		if n := complete(t, base, prompt); n != 96 {
			t.Errorf("the cache was cleared although the reset failed: %d cached", n)
		}
	}
}
