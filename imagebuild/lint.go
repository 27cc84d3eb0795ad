package imagebuild

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"

	"github.com/moby/buildkit/client"
	gateway "github.com/moby/buildkit/frontend/gateway/client"
	"github.com/moby/buildkit/frontend/subrequests/lint"
)

// Lint runs BuildKit's own Dockerfile checks over the Dockerfile r
// builds, with the build's arguments and contexts: the Dockerfile
// frontend's lint subrequest, what "docker build --check" asks for.
// Findings are BuildKit's rules (their names and descriptions), in the
// order BuildKit reports them. WithAddr and WithInsecureRegistry apply.
func Lint(ctx context.Context, r *Resolved, opts ...Option) ([]Finding, error) {
	o, err := optionsOf(opts)
	if err != nil {
		return nil, err
	}
	c, bkVersion, err := connect(ctx, o.addr, o.connect)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	plan := MakePlan(r, o.version, bkVersion)
	tmp, err := os.MkdirTemp("", "kvsweep-lint-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	solve := client.SolveOpt{FrontendAttrs: plan.FrontendAttrs}
	if err := localMounts(&solve, r, plan, tmp); err != nil {
		return nil, err
	}
	var res lint.LintResults
	_, err = c.Build(ctx, solve, "kvsweep", func(ctx context.Context, gc gateway.Client) (*gateway.Result, error) {
		attrs := maps.Clone(solve.FrontendAttrs)
		attrs["requestid"] = lint.RequestLint
		out, err := gc.Solve(ctx, gateway.SolveRequest{Frontend: "dockerfile.v0", FrontendOpt: attrs})
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(out.Metadata["result.json"], &res); err != nil {
			return nil, fmt.Errorf("BuildKit's lint result: %w", err)
		}
		return gateway.NewResult(), nil
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("BuildKit's Dockerfile checks: %w", err)
	}
	name, _, _ := dockerfile(r)
	if res.Error != nil {
		return nil, fmt.Errorf("%s:%d: %s", name, lintLine(res.Error.Location.Ranges), res.Error.Message)
	}
	out := make([]Finding, 0, len(res.Warnings))
	for _, w := range res.Warnings {
		f := Finding{File: name, Rule: w.RuleName, Message: w.Detail}
		if w.Location != nil {
			f.Line = lintLine(w.Location.Ranges)
		}
		if w.URL != "" {
			f.Message += " (" + w.URL + ")"
		}
		out = append(out, f)
	}
	return out, nil
}

// lintLine is the first line of a location's ranges (0 when it has none).
func lintLine[R interface{ GetStart() P }, P interface{ GetLine() int32 }](rs []R) int {
	if len(rs) == 0 {
		return 0
	}
	return int(rs[0].GetStart().GetLine())
}
