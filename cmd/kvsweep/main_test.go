package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kvsweep/kvsweep/internal/testing/pgtest"
	"github.com/kvsweep/kvsweep/internal/testing/realout"
)

func TestMain(m *testing.M) {
	testscript.Main(pgtest.Stopping(m), map[string]func(){
		"kvsweep": main,
	})
}

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script/*.txtar")

// The CLI's behaviour as readable scripts: testdata/script/*.txtar. With
// -update, cmp lines against a file of the script rewrite that file.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", mustAbs(t, "../../examples"))
			env.Setenv("SWEEPS", mustAbs(t, "../../testrun/testdata"))
			env.Setenv("REALOUT", realout.Path())
			env.Setenv("KVSWEEP_STORE", env.WorkDir+"/history.db")
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "realout" {
				return realout.Present()
			}
			if cond == "pg" {
				return false, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// The scripts that read and write the history store, again with the
// store on PostgreSQL (a database of each script's own): every command
// works unchanged on either. [pg] marks what differs (the store's name).
// testdata/pgscript holds the scripts of the PostgreSQL store alone.
func TestScriptsOnPostgres(t *testing.T) {
	files, err := filepath.Glob("testdata/pgscript/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/pgscript: %v", err)
	}
	for _, name := range []string{"ci", "collect_report", "compare", "probes", "newcomer_forget"} {
		files = append(files, "testdata/script/"+name+".txtar")
	}
	testscript.Run(t, testscript.Params{
		Files: files,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", mustAbs(t, "../../examples"))
			env.Setenv("SWEEPS", mustAbs(t, "../../testrun/testdata"))
			env.Setenv("REALOUT", realout.Path())
			db := pgtest.DB(t)
			env.Setenv("KVSWEEP_STORE", db)
			// The same database by a URL with a password (trust
			// authentication takes any): what no message may show.
			env.Setenv("STORE_WITH_PASSWORD", strings.Replace(db, "kvsweep@", "kvsweep:hunter2-pw@", 1))
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "realout" {
				return realout.Present()
			}
			if cond == "pg" {
				return true, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

func mustAbs(t *testing.T, p string) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd + "/" + p
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad.yaml"
	if err := os.WriteFile(bad, []byte("version: 1\nname: x\nnope: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{}, exitUsage, "Usage:"},
		{[]string{"version"}, exitOK, ""},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"plan"}, exitUsage, "expected one argument, the spec file; got 0"},
		{[]string{"plan", "--format", "xml", "../../examples/phase1.yaml"}, exitUsage, `--format "xml": expected one of table, markdown, json`},
		{[]string{"plan", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"plan", bad}, exitUsage, bad + `:3:1: unknown key "nope"`},
		// A missing input is a usage error, like a bad spec.
		{[]string{"plan", dir + "/missing.yaml"}, exitUsage, "no such file"},
		{[]string{"status", dir + "/nosweep"}, exitUsage, "is not a sweep directory"},
		{[]string{"collect", dir + "/nosweep"}, exitUsage, "is not a sweep directory"},
		{[]string{"report", "--store", dir + "/none.db", dir + "/nosweep"}, exitUsage, "is not a sweep directory, and history store"},
		{[]string{"--version"}, exitOK, ""},
		{[]string{"help", "image", "build"}, exitOK, ""},
		{[]string{"help", "image", "nosuch"}, exitUsage, `unknown command "image nosuch"`},
		// Refused before any pin is resolved.
		{[]string{"image", "build", "--pins", dir + "/missing.yaml"}, exitUsage, "say where the image goes: --push REF"},
		{[]string{"render", "../../examples/phase1.yaml"}, exitUsage, "--out DIR is required"},
		{[]string{"plan", "--help"}, exitOK, ""},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != tc.code {
			t.Errorf("kvsweep %v: exit %d, want %d\nstderr: %s", tc.args, code, tc.code, errb.String())
		}
		if !strings.Contains(errb.String(), tc.stderr) {
			t.Errorf("kvsweep %v: stderr %q lacks %q", tc.args, errb.String(), tc.stderr)
		}
	}
}

// Every shipped spec and lane renders on a fresh checkout without the
// network (--offline): the pins' lock is committed, the commits the pins
// name exactly become the jobs' expectations, and what needs the network
// (a tag, the KVCR checkout) is said, not fatal.
func TestShippedRenderOffline(t *testing.T) {
	var specs []string
	for _, g := range []string{"../../examples/*.yaml", "../../examples/lanes/*.yaml"} {
		m, _ := filepath.Glob(g)
		for _, f := range m {
			if !strings.HasSuffix(f, "pins.yaml") {
				specs = append(specs, f)
			}
		}
	}
	if len(specs) < 5 {
		t.Fatalf("found %d shipped specs: %v", len(specs), specs)
	}
	for _, spec := range specs {
		var out, errb bytes.Buffer
		dir := filepath.Join(t.TempDir(), "sweep")
		if code := run([]string{"render", spec, "--out", dir, "--offline"}, &out, &errb); code != exitOK {
			t.Errorf("kvsweep render %s --offline: exit %d\n%s", spec, code, errb.String())
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(spec, "lanes/phase1") && (!strings.Contains(string(b), `"vllm_adapter": "132765e3560659ff63ebd236203672e991b70e08"`) ||
			!strings.Contains(errb.String(), "dynamo (ref v1.2.0), kvcr (a local checkout) not resolved")) {
			t.Errorf("%s: the pinned adapter commit is not expected, or the unresolved pins are not said:\n%s\n%s", spec, b, errb.String())
		}
	}
}
