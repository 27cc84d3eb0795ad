package cachectl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"
)

// resetOne resets one engine's cache: it tells the engine's kind from its
// metrics, waits until it is idle and calls its reset endpoint.
func resetOne(ctx context.Context, o Options, e Endpoint) Step {
	s := Step{What: "reset", Target: e.URL}
	m, scrapeErr := o.scrape(ctx, e.URL)
	if scrapeErr != nil && e.Kind == "" {
		s.Detail = fmt.Sprintf("could not read its metrics to tell the engine: %v", scrapeErr)
		return s
	}
	k := kind(e, m)
	switch k {
	case "":
		s.Detail = "no vllm:, sglang: or dynamo_ families in its metrics: not an engine kvsweep can reset (engine= on its telemetry-endpoints line names one)"
		return s
	case Dynamo:
		s.Detail = "Dynamo v1.2.0 has no HTTP route that clears KV caches (its frontend does not mount /clear_kv_blocks; the workers' clear_kv_blocks is on the request plane only): list each worker's engine server with reset=URL, or reset the tier with cache.tier_reset"
		return s
	}
	target, err := resetURL(e, k, m)
	if err != nil {
		s.Detail = err.Error()
		return s
	}
	s.Target = target
	idle, note := true, fmt.Sprintf("idle not checked: %v", scrapeErr)
	if scrapeErr == nil {
		idle, note = o.waitIdle(ctx, e, k, m)
	}
	if !idle {
		s.Detail = note
		return s
	}
	code, body, err := o.post(ctx, target)
	s.OK, s.Detail = judge(k, code, body, err)
	s.Detail += " (" + note + ")"
	if s.OK && strings.Contains(target, "reset_external=true") {
		s.Detail += "; reset_external=true asked the KV connector to reset too, which most connectors (OffloadingConnector, LMCache, Nixl at vLLM v0.20.1) do not implement: the tier's own flush is cache.tier_reset"
	}
	return s
}

// externalQueries is vLLM's counter of the tokens it asked a KV
// connector for: above 0, the engine has a connector.
const externalQueries = "vllm:external_prefix_cache_queries_total"

// resetURL is where k's cache is reset: the reset= attribute, else the
// engine's route on the metrics URL's server; vLLM's also resets the
// connector's cache when the engine counts the connector's hits.
func resetURL(e Endpoint, k string, m metrics) (string, error) {
	target := e.Reset
	if target == "" {
		u, err := url.Parse(e.URL)
		if err != nil {
			return "", err
		}
		u.Path, u.RawQuery = map[string]string{VLLM: "/reset_prefix_cache", SGLang: "/flush_cache"}[k], ""
		target = u.String()
	}
	if k == VLLM && m.sum[externalQueries] > 0 && !strings.Contains(target, "reset_external") {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		target += sep + "reset_external=true"
	}
	return target, nil
}

func (o Options) post(ctx context.Context, target string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}

// judge says whether an engine's answer to a reset means it reset, and
// what the answer said.
func judge(k string, code int, body string, err error) (bool, string) {
	switch {
	case err != nil:
		return false, err.Error()
	case code == http.StatusOK && k == VLLM:
		return true, "200: vLLM answers 200 whether or not the reset took (it refuses while blocks are in use), so it was sent only when idle; the case's hit rate is the check"
	case code == http.StatusOK:
		return true, "200: " + trunc(body, 200)
	case code == http.StatusNotFound && k == VLLM:
		return false, "404: the server has no /reset_prefix_cache: start vLLM with VLLM_SERVER_DEV_MODE=1"
	case code == http.StatusBadRequest && k == SGLang:
		return false, "400: SGLang refused the flush: " + trunc(body, 500)
	}
	return false, fmt.Sprintf("%d %s: %s", code, http.StatusText(code), trunc(body, 500))
}

// runStep runs argv (a spec's tier reset or priming step) in the cell
// directory, bounded by CommandTimeout; its output's end is the detail.
func runStep(ctx context.Context, o Options, what string, argv []string) Step {
	s := Step{What: what}
	if len(argv) == 0 {
		s.Target, s.Detail = "-", "no command given"
		return s
	}
	s.Target = trunc(strings.Join(argv, " "), 200)
	ctx, cancel := context.WithTimeout(ctx, o.CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = o.CellDir
	cmd.WaitDelay = 5 * time.Second
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	msg := strings.TrimSpace(out.String())
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.Detail = fmt.Sprintf("killed after %s", o.CommandTimeout)
	case err != nil:
		s.Detail = err.Error()
	default:
		s.OK, s.Detail = true, "exit 0"
	}
	if msg != "" {
		s.Detail = strings.TrimPrefix(s.Detail+": "+msg, ": ")
	}
	return s
}

// tail keeps the last 2 KB written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2<<10 {
		t.b = append([]byte("..."), t.b[len(t.b)-2<<10:]...)
	}
	return len(p), nil
}

func (t *tail) String() string { return string(bytes.ToValidUTF8(t.b, []byte("?"))) }
