// Package arch keeps the package graph the way docs/architecture.md draws
// it. Allowed is the allow-list: for every package of the module, the
// packages of the module it may import (its non-test files; tests may
// import more). Heavy says which third-party trees only some packages may
// pull in, directly or not. The package's test checks the module against
// both, and the doc's table against Allowed, line for line.
package arch

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Module is the module path the package names below are relative to.
const Module = "github.com/kvsweep/kvsweep/"

// Allowed lists, for each package of the module, the packages of the
// module its non-test files may import. A package missing here is an
// error: a new package takes its place in the table on purpose.
var Allowed = map[string][]string{
	"cmd/kvsweep":                 {"analysis", "cachectl", "coord", "examples", "gpuhealth", "gpustat", "harness", "history", "history/bolt", "history/pg", "imagebuild", "internal/cpuprof", "internal/fail", "internal/progress", "lane", "lane/images", "live", "loadsearch", "matrix", "profiling", "render", "render/kubejob", "reports", "result", "scheduler", "scheduler/k8s", "scheduler/local", "scheduler/slurm", "staging", "sweep", "telemetry", "testrun"},
	"lane/images":                 {"imagebuild", "lane"},
	"live":                        {"gpustat", "internal/fail", "lane", "scheduler", "sweep", "telemetry"},
	"lane":                        {"analysis", "bisect", "harness", "history", "internal/fail", "matrix", "render", "reports", "result", "rules", "scheduler", "sweep", "testrun"},
	"matrix":                      {"internal/names", "internal/yamlpos", "rules"},
	"render":                      {"internal/shq", "internal/table", "matrix", "rules", "sweep", "templates"},
	"render/kubejob":              {"internal/kubeid", "matrix", "sweep"},
	"scheduler":                   {"internal/fail", "internal/shq", "internal/table", "sweep"},
	"scheduler/k8s":               {"internal/kubeid", "scheduler", "sweep"},
	"scheduler/slurm":             {"scheduler", "sweep"},
	"scheduler/local":             {"internal/fail", "scheduler", "sweep"},
	"sweep":                       {"internal/jsonscan", "internal/jsonsplit", "internal/names"},
	"result":                      {"internal/jsonscan", "provenance"},
	"harness":                     {"internal/jsonscan", "result", "sweep"},
	"testrun":                     {"gpuhealth", "gpustat", "hardware", "harness", "internal/fail", "internal/jsonscan", "internal/jsonsplit", "internal/shq", "internal/yamlpos", "profiling", "provenance", "result", "rules", "sweep", "telemetry"},
	"history":                     {"internal/fail", "sweep", "testrun"},
	"history/bolt":                {"history", "sweep", "testrun"},
	"history/pg":                  {"history", "testrun"},
	"analysis":                    {"history", "internal/fail", "result", "testrun"},
	"reports":                     {"analysis", "frontier", "internal/fail", "internal/jsonscan", "internal/table", "result", "sweep", "testrun"},
	"imagebuild":                  {"internal/yamlpos", "provenance", "templates"},
	"coord":                       {"internal/fail"},
	"bisect":                      {"internal/yamlpos", "sweep"},
	"staging":                     {},
	"hardware":                    {},
	"telemetry":                   {"internal/jsonscan", "sweep"},
	"cachectl":                    {"internal/fail", "sweep"},
	"profiling":                   {"cachectl", "internal/fail", "sweep"},
	"gpustat":                     {},
	"internal/progress":           {},
	"gpuhealth":                   {"internal/fail"},
	"frontier":                    {},
	"loadsearch":                  {"frontier", "internal/fail", "internal/table", "lane", "matrix", "result", "sweep", "testrun"},
	"provenance":                  {},
	"rules":                       {},
	"templates":                   {},
	"upstream":                    {},
	"examples":                    {},
	"e2e":                         {},
	"internal/arch":               {},
	"internal/testing/etcdtest":   {},
	"internal/testing/pgtest":     {},
	"internal/testing/storetest":  {"history", "internal/testing/runtest", "internal/testing/sweeptest", "provenance", "result", "testrun"},
	"internal/cpuprof":            {},
	"internal/fail":               {},
	"internal/testing/fill":       {},
	"internal/testing/golden":     {},
	"internal/testing/realout":    {},
	"internal/testing/imagetest":  {},
	"internal/jsonscan":           {},
	"internal/jsonsplit":          {"internal/jsonscan"},
	"internal/kubeid":             {},
	"internal/names":              {},
	"internal/shq":                {},
	"internal/testing/sweeptest":  {"scheduler", "scheduler/local", "sweep"},
	"internal/testing/rendertest": {"matrix", "render", "sweep"},
	"internal/testing/runtest":    {"internal/testing/sweeptest", "testrun"},
	"internal/table":              {},
	"internal/yamlpos":            {},
}

// Heavy lists third-party trees that only the packages named may import;
// any other package has them only through one of those, so a package that
// needs none of them links none of them: BuildKit and the registry client
// belong to imagebuild (and the tests' image builder), etcd to coord,
// client-go to the Kubernetes scheduler, the JSON Schema validator to
// result, the PostgreSQL driver to history/pg (and the tests' server),
// the terminal-UI library to the live view.
var Heavy = map[string][]string{
	"github.com/moby/buildkit":               {"imagebuild"},
	"github.com/google/go-containerregistry": {"imagebuild", "internal/testing/imagetest"},
	"go.etcd.io/etcd/client/v3":              {"coord"},
	"github.com/kaptinlin/jsonschema":        {"result"},
	"k8s.io/client-go":                       {"scheduler/k8s"},
	"k8s.io/api":                             {"scheduler/k8s", "render/kubejob"},
	"github.com/jackc/pgx/v5":                {"history/pg", "internal/testing/pgtest"},
	"github.com/charmbracelet/bubbletea":     {"live"},
	"github.com/charmbracelet/lipgloss":      {"live"},
}

// Package is what Check needs to know of one package: its path relative
// to Module, the module packages its non-test files import, and every
// package it depends on (go list's Deps).
type Package struct {
	Path    string
	Imports []string // module packages, relative to Module
	Deps    []string // full import paths
}

// Check returns one sentence per rule a package breaks: an import outside
// its line of Allowed, a package with no line, or a heavy tree it depends
// on though it is none of the tree's owners and depends on none of them.
// Empty when the graph is as drawn.
func Check(pkgs []Package, allowed map[string][]string, heavy map[string][]string) []string {
	var out []string
	for _, p := range pkgs {
		may, ok := allowed[p.Path]
		if !ok {
			out = append(out, fmt.Sprintf("%s has no line in the allow-list (internal/arch.Allowed, docs/architecture.md)", p.Path))
			continue
		}
		for _, imp := range p.Imports {
			if !slices.Contains(may, imp) {
				out = append(out, fmt.Sprintf("%s imports %s, which its line does not allow (allowed: %s)", p.Path, imp, strings.Join(may, ", ")))
			}
			if upward(p.Path, imp) {
				out = append(out, fmt.Sprintf("%s imports %s: a package of internal/ imports only internal/ packages (test helpers live in internal/testing/)", p.Path, imp))
			}
		}
		for _, d := range p.Deps {
			for root, owners := range heavy {
				if (d == root || strings.HasPrefix(d, root+"/")) && !slices.Contains(owners, p.Path) && !dependsOnAny(p, owners) {
					out = append(out, fmt.Sprintf("%s depends on %s, which belongs to %s only", p.Path, d, strings.Join(owners, ", ")))
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// dependsOnAny reports whether p depends on one of the module packages.
func dependsOnAny(p Package, pkgs []string) bool {
	return slices.ContainsFunc(p.Deps, func(d string) bool {
		rel, ok := strings.CutPrefix(d, Module)
		return ok && slices.Contains(pkgs, rel)
	})
}

// upward says whether pkg, a package of internal/ other than the tests'
// helpers (internal/testing/), imports imp from outside internal/ or
// from the helpers: internal/ is the bottom of the graph.
func upward(pkg, imp string) bool {
	if !strings.HasPrefix(pkg, "internal/") || strings.HasPrefix(pkg, "internal/testing/") {
		return false
	}
	return !strings.HasPrefix(imp, "internal/") || strings.HasPrefix(imp, "internal/testing/")
}
