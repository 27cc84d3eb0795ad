package cachectl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// EndpointsFile is the file in the cell directory where a harness lists
// the engines it starts, one a line: "URL [key=value...]".
const EndpointsFile = "telemetry-endpoints"

// Engine kinds, told by the families an engine's /metrics exposes or by
// a line's engine= attribute.
const (
	VLLM   = "vllm"
	SGLang = "sglang"
	Dynamo = "dynamo"
)

// Endpoint is an engine's metrics URL, what kind it is and where its
// cache is reset (empty: derived from the metrics URL).
type Endpoint struct {
	URL, Kind, Reset, Role, Name string
}

// Endpoints are the spec's endpoints and those the cell's endpoints file
// lists (a regular file of at most 64 KB), each once; a line that cannot
// be read is a failed step.
func Endpoints(cellDir string, spec []string) ([]Endpoint, []Step) {
	var out []Endpoint
	seen := map[string]int{}
	add := func(e Endpoint) {
		if i, ok := seen[e.URL]; ok {
			out[i] = e // the listed line's attributes win
			return
		}
		seen[e.URL] = len(out)
		out = append(out, e)
	}
	for _, u := range spec {
		add(Endpoint{URL: u})
	}
	b, err := sweep.ReadFile(cellDir, EndpointsFile, 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, []Step{{What: "endpoints", Target: EndpointsFile, Detail: fmt.Sprintf("refused: %v", err)}}
	}
	var bad []Step
	for i, l := range bytes.Split(b, []byte("\n")) {
		// Blank and # lines are none, as telemetry reads the file.
		if t := bytes.TrimSpace(l); len(t) == 0 || t[0] == '#' {
			continue
		}
		e, err := parseLine(string(l))
		if err != nil {
			bad = append(bad, Step{What: "endpoints", Target: fmt.Sprintf("%s:%d", EndpointsFile, i+1), Detail: err.Error()})
			continue
		}
		add(e)
	}
	return out, bad
}

// parseLine reads "URL [engine=K] [reset=URL] [role=R] [name=N]".
func parseLine(l string) (Endpoint, error) {
	f := strings.Fields(l)
	e := Endpoint{URL: f[0]}
	if !isHTTP(e.URL) {
		return e, fmt.Errorf("%q is not an endpoint (expected an http:// or https:// URL)", trunc(e.URL, 200))
	}
	for _, a := range f[1:] {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "engine":
			if v != VLLM && v != SGLang && v != Dynamo {
				return e, fmt.Errorf("engine=%q: expected vllm, sglang or dynamo", trunc(v, 200))
			}
			e.Kind = v
		case "reset":
			if !isHTTP(v) {
				return e, fmt.Errorf("reset=%q is not an http:// or https:// URL", trunc(v, 200))
			}
			e.Reset = v
		case "role":
			e.Role = v
		case "name":
			e.Name = v
		}
	}
	return e, nil
}

func isHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// ResetEngines resets every engine's cache (spec: the spec's telemetry
// endpoints; the cell's endpoints file adds more), one step each.
func ResetEngines(ctx context.Context, o Options, spec []string) []Step {
	o.defaults()
	eps, steps := Endpoints(o.CellDir, spec)
	if len(eps) == 0 {
		return append(steps, Step{What: "reset", Target: "engines", Detail: "no engine endpoints to reset: the spec's telemetry lists none and " + EndpointsFile + " names none"})
	}
	for _, e := range eps {
		steps = append(steps, resetOne(ctx, o, e))
	}
	return steps
}

// metrics is one scrape, reduced to what a reset needs: the value of each
// family summed over its series, and the engine kinds whose families
// appear.
type metrics struct {
	sum   map[string]float64
	kinds map[string]bool
}

func (o Options) scrape(ctx context.Context, u string) (metrics, error) {
	m := metrics{sum: map[string]float64{}, kinds: map[string]bool{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return m, err
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 32<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		parseSample(sc.Text(), m)
	}
	return m, sc.Err()
}

// parseSample adds one exposition line's sample to m.
func parseSample(l string, m metrics) {
	if l == "" || l[0] == '#' {
		return
	}
	name, rest := l, ""
	if i := strings.IndexAny(l, "{ "); i >= 0 {
		name, rest = l[:i], l[i:]
	}
	switch {
	case strings.HasPrefix(name, "vllm:"):
		m.kinds[VLLM] = true
	case strings.HasPrefix(name, "sglang:"), strings.HasPrefix(name, "sglang_"):
		m.kinds[SGLang] = true
		name = "sglang:" + name[len("sglang:"):]
	case strings.HasPrefix(name, "dynamo_"):
		m.kinds[Dynamo] = true
	}
	if j := strings.LastIndexByte(rest, '}'); j >= 0 {
		rest = rest[j+1:]
	}
	if f := strings.Fields(rest); len(f) > 0 {
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			m.sum[name] += v
		}
	}
}

// kind is what e is: its engine= attribute, else what its families say
// (a Dynamo worker's system port passes vLLM's and SGLang's families
// through, so Dynamo's own win unless a reset= URL names the engine's
// server).
func kind(e Endpoint, m metrics) string {
	switch {
	case e.Kind != "":
		return e.Kind
	case m.kinds[Dynamo] && e.Reset == "":
		return Dynamo
	case m.kinds[VLLM]:
		return VLLM
	case m.kinds[SGLang]:
		return SGLang
	}
	return ""
}

// busy names the gauges that say an engine is working: running and
// waiting requests (vLLM), running and queued requests (SGLang).
var busy = map[string][2]string{
	VLLM:   {"vllm:num_requests_running", "vllm:num_requests_waiting"},
	SGLang: {"sglang:num_running_reqs", "sglang:num_queue_reqs"},
}

// waitIdle scrapes e until its busy gauges are both 0 or IdleWait
// passes; it says what it saw.
func (o Options) waitIdle(ctx context.Context, e Endpoint, k string, m metrics) (bool, string) {
	names := busy[k]
	deadline := time.Now().Add(o.IdleWait)
	for {
		run, ok1 := m.sum[names[0]]
		wait, ok2 := m.sum[names[1]]
		if !ok1 && !ok2 {
			return true, fmt.Sprintf("idle not checked: %s exposes neither %s nor %s", e.URL, names[0], names[1])
		}
		if run == 0 && wait == 0 {
			return true, fmt.Sprintf("idle before the reset (%s 0, %s 0)", names[0], names[1])
		}
		if time.Now().After(deadline) {
			return false, fmt.Sprintf("still busy after %s (%s %g, %s %g): reset not sent", o.IdleWait, names[0], run, names[1], wait)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err().Error()
		case <-time.After(o.Poll):
		}
		var err error
		if m, err = o.scrape(ctx, e.URL); err != nil {
			return false, fmt.Sprintf("waiting for idle: %v", err)
		}
	}
}
