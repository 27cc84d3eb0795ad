package profiling

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/kvsweep/kvsweep/cachectl"
	"github.com/kvsweep/kvsweep/sweep"
)

// engines are the profiled workers' engines: the spec's telemetry
// endpoints and the lines of telemetry-endpoints, those whose name= (or
// role=) the plan names; the lines that cannot be read are skip lines.
func engines(o Options, p *sweep.ProfilePlan, caseID string) []cachectl.Endpoint {
	var spec []string
	if m, err := sweep.ReadManifest(o.SweepDir); err == nil && m.Telemetry != nil {
		spec = m.Telemetry.Endpoints
	}
	eps, bad := cachectl.Endpoints(o.CellDir, spec)
	for _, b := range bad {
		_ = o.record(Line{Event: "skip", Case: caseID, Target: b.Target, Detail: b.Detail})
	}
	var out []cachectl.Endpoint
	for _, e := range eps {
		if len(p.Workers) == 0 || p.ProfiledWorker(e.Name) || (e.Name == "" && p.ProfiledWorker(e.Role)) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		_ = o.record(Line{Event: "skip", Case: caseID, Detail: fmt.Sprintf("no engine to profile: the spec's telemetry endpoints and %s name none of the workers %s", cachectl.EndpointsFile, strings.Join(p.Workers, ", "))})
	}
	return out
}

// workerOf is how an engine is named in the record: its name=, role=, or
// address.
func workerOf(e cachectl.Endpoint) string {
	for _, s := range []string{e.Name, e.Role} {
		if s != "" {
			return s
		}
	}
	if u, err := url.Parse(e.URL); err == nil {
		return u.Host
	}
	return e.URL
}

// route is the engine's route at the address of its metrics.
func route(e cachectl.Endpoint, path string) string {
	u, err := url.Parse(e.URL)
	if err != nil {
		return e.URL
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String()
}

// startAll asks each profiled engine to start its profiler (true when
// one did, so the end asks them to stop): POST
// /start_profile (vLLM and SGLang), with SGLang's output_dir, the case's
// folder under the cell's profile folder (vLLM writes where its
// --profiler-config says, and ignores the body).
func startAll(ctx context.Context, o Options, p *sweep.ProfilePlan, caseID string) bool {
	took := false
	for _, e := range engines(o, p, caseID) {
		w := workerOf(e)
		if e.Kind == cachectl.Dynamo {
			_ = o.record(Line{Event: "skip", Case: caseID, Worker: w, Target: e.URL, Detail: "a Dynamo frontend has no profiler route: list the worker's engine (engine=vllm or sglang) in " + cachectl.EndpointsFile})
			continue
		}
		dir := filepath.Join(o.CellDir, sweep.ProfileDir, "torch", safe(caseID), safe(w))
		body, _ := json.Marshal(map[string]string{OutputDirKey: dir})
		l := post(ctx, o, route(e, StartRoute), body)
		l.Event, l.Case, l.Worker = "start", caseID, w
		took = took || l.OK
		_ = o.record(l)
	}
	return took
}

// stopAll asks each profiled engine to stop its profiler and write its
// trace: POST /stop_profile, answered once the trace is written.
func stopAll(ctx context.Context, o Options, p *sweep.ProfilePlan, caseID string) {
	for _, e := range engines(o, p, caseID) {
		if e.Kind == cachectl.Dynamo {
			continue
		}
		l := post(ctx, o, route(e, StopRoute), nil)
		l.Event, l.Case, l.Worker = "stop", caseID, workerOf(e)
		_ = o.record(l)
	}
}

// post sends one request and says how it went: 200 is taken; a 404 is
// an engine started without its profiler.
func post(ctx context.Context, o Options, u string, body []byte) Line {
	l := Line{Target: u}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		l.Detail = err.Error()
		return l
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		l.Detail = err.Error()
		return l
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	text := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "?")), " ")
	switch {
	case resp.StatusCode == http.StatusOK:
		l.OK, l.Detail = true, text
	case resp.StatusCode == http.StatusNotFound:
		l.Detail = fmt.Sprintf("%s: the engine serves no profiler route (vLLM adds it only when started with --profiler-config '{\"profiler\":\"torch\",\"torch_profiler_dir\":DIR}' or {\"profiler\":\"cuda\"}) %s", resp.Status, text)
	default:
		l.Detail = strings.TrimSpace(resp.Status + " " + text)
	}
	return l
}

// safe is s as one file name.
func safe(s string) string {
	if s == "." || s == ".." {
		return "_" + s
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '\\' {
			return '_'
		}
		return r
	}, s)
}
