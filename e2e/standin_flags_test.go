package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/kvsweep/kvsweep/upstream"
)

// vllmStandin is the stand-in for the vllm CLI (testdata/vllm_cli_standin.py).
const vllmStandin = "testdata/vllm_cli_standin.py"

// pinnedVLLM is the vLLM base image examples/pins.yaml pins and its
// release (the image's tag), whose facts the stand-in is built from.
func pinnedVLLM(t testing.TB) (image, release string) {
	t.Helper()
	b, err := os.ReadFile("../examples/pins.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Base string `yaml:"base"`
	}
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	ref, _, _ := strings.Cut(p.Base, "@")
	i := strings.LastIndex(ref, ":")
	if i < 0 {
		t.Fatalf("examples/pins.yaml: base %q has no tag", p.Base)
	}
	return p.Base, ref[i+1:]
}

// writeStandinFacts writes what the pinned vLLM accepts, from its facts
// (upstream/facts), as the lists the vllm CLI stand-in reads from the
// directory $STANDIN_FACTS names, and returns that directory. A flag takes
// one value unless its fact's note says it is argparse's store_true or
// BooleanOptionalAction; a boolean the lanes use whose note says neither
// is taken with or without a value.
func writeStandinFacts(t testing.TB) string {
	t.Helper()
	_, release := pinnedVLLM(t)
	rel, err := upstream.For("vllm", release)
	if err != nil {
		t.Fatalf("the pinned vLLM %s: %v", release, err)
	}
	alias := regexp.MustCompile(`short alias (-[A-Za-z]+)`)
	flags := func(key string) []string {
		var lines []string
		for _, f := range rel.All(key) {
			kind := "value"
			switch {
			case strings.Contains(f.Note, "store_true"):
				kind = "store_true"
			case strings.Contains(f.Note, "BooleanOptionalAction"):
				kind = "optional"
			case f.Value() == "--save-result" || f.Value() == "--enforce-eager" ||
				f.Value() == "--enable-prefix-caching" || f.Value() == "--ignore-eos":
				kind = "either"
			}
			line := f.Value() + " " + kind
			for _, m := range alias.FindAllStringSubmatch(f.Note, -1) {
				line += " " + m[1]
			}
			lines = append(lines, line)
		}
		return lines
	}
	one := func(key string) []string {
		f, ok := rel.One(key)
		if !ok {
			return nil
		}
		return f.Values
	}
	dir := t.TempDir()
	for name, lines := range map[string][]string{
		"serve.flags":       flags("serve.flag"),
		"bench_serve.flags": flags("bench_serve.flag"),
		"datasets":          one("bench_serve.dataset_choices"),
		"connectors":        rel.Values("kv_connector.registered"),
		"kv_fields":         rel.Values("kv_transfer_config.field"),
		"kv_roles":          one("kv_transfer_config.kv_role_choices"),
	} {
		if len(lines) == 0 {
			t.Fatalf("the facts of vLLM %s (%s) give no %s", release, rel.File, name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The vllm CLI stand-in refuses what the pinned vLLM refuses, as vLLM
// does, and accepts what the bare-vLLM probe lane gives it. It runs the
// stand-in directly with STANDIN_PARSE_ONLY=1 (no server, no cluster).
func TestStandinRefusesLikeUpstream(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	facts := writeStandinFacts(t)
	src, err := os.ReadFile("../examples/lanes/vllm-bare-probe.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var lane struct {
		Engines map[string]struct {
			Args []string `yaml:"args"`
		} `yaml:"engines"`
	}
	if err := yaml.Unmarshal(src, &lane); err != nil {
		t.Fatal(err)
	}
	laneArgs := lane.Engines["vllm"].Args
	if len(laneArgs) != 2 || laneArgs[0] != "--kv-transfer-config" {
		t.Fatalf("the lane's vllm engine args are %q, not --kv-transfer-config JSON", laneArgs)
	}
	kvcr := `{"kv_connector": "KVCRConnector", "kv_role": "kv_both"}`
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // on stderr
	}{
		{"serve as the lane runs it", []string{"serve", "/models/m", "--port", "1", "--max-model-len", "8192"}, 0, ""},
		{"serve with the lane's KVCR engine args", append([]string{"serve", "/models/m", "--port", "1", "--max-model-len", "8192"}, laneArgs...), 0, ""},
		{"serve, booleans and vLLM's spellings", []string{"serve", "--model", "m", "--port=1", "--max_model_len", "8", "--enforce-eager", "--no-enable-prefix-caching", "-tp", "1"}, 0, ""},
		{"serve, an unknown flag", []string{"serve", "m", "--port", "1", "--no-such-flag"}, 2, "vllm: error: unrecognized arguments: --no-such-flag\n"},
		{"serve, a stray argument", []string{"serve", "m", "extra"}, 2, "vllm: error: unrecognized arguments: extra\n"},
		{"serve, a flag without its value", []string{"serve", "m", "--port"}, 2, "vllm serve: error: argument --port: expected one argument"},
		{"serve, a value given to a boolean", []string{"serve", "m", "--enforce-eager=1"}, 2, "vllm serve: error: argument --enforce-eager: ignored explicit argument '1'"},
		{"bench serve as the lane runs it", []string{"bench", "serve", "--backend", "vllm", "--model", "m", "--port", "1", "--dataset-name", "random", "--random-input-len", "1024", "--random-output-len", "128", "--num-prompts", "200", "--save-result", "--result-dir", "d", "--result-filename", "bench.json"}, 0, ""},
		{"bench serve, an unknown flag", []string{"bench", "serve", "--port", "1", "--max-model-len", "8"}, 2, "vllm: error: unrecognized arguments: --max-model-len 8\n"},
		{"bench serve, an unknown dataset", []string{"bench", "serve", "--dataset-name", "nope"}, 2, "vllm bench serve: error: argument --dataset-name: invalid choice: 'nope' (choose from sharegpt, "},
		{"an unregistered connector without a module path", []string{"serve", "m", "--kv-transfer-config", kvcr}, 1, "ValueError: Unsupported connector type: KVCRConnector\n"},
		{"an unregistered connector with a module path", []string{"serve", "m", "--kv-transfer-config", `{"kv_connector": "KVCRConnector", "kv_role": "kv_both", "kv_connector_module_path": "kvcr.connector"}`}, 0, ""},
		{"a module path given as dotted keys", []string{"serve", "m", "--kv-transfer-config", kvcr, "--kv-transfer-config.kv_connector_module_path", "kvcr.connector"}, 0, ""},
		{"an empty module path", []string{"serve", "m", "--kv-transfer-config", `{"kv_connector": "KVCRConnector", "kv_role": "kv_both", "kv_connector_module_path": ""}`}, 1, "ValueError: kv_connector_module_path cannot be an empty string.\n"},
		{"a registered connector", []string{"serve", "m", "--kv-transfer-config", `{"kv_connector": "NixlConnector", "kv_role": "kv_both"}`}, 0, ""},
		// pydantic refuses these while argparse converts the value
		// (parse_dataclass in vllm/engine/arg_utils.py): argparse's error, exit 2.
		{"an unknown KVTransferConfig field", []string{"serve", "m", "--kv-transfer-config", `{"kv_connector": "NixlConnector", "kv_role": "kv_both", "kv_cache_tier": 2}`}, 2, "vllm serve: error: argument --kv-transfer-config: 1 validation error for KVTransferConfig\nkv_cache_tier\n  Extra inputs are not permitted"},
		{"a kv_role outside the choices", []string{"serve", "m", "--kv-transfer-config", `{"kv_connector": "NixlConnector", "kv_role": "both"}`}, 2, "kv_role\n  Input should be 'kv_producer', 'kv_consumer' or 'kv_both'"},
		{"kv_connector without kv_role", []string{"serve", "m", "--kv-transfer-config", `{"kv_connector": "NixlConnector"}`}, 2, "Please specify kv_role when kv_connector is set"},
		{"a config that is not JSON", []string{"serve", "m", "--kv-transfer-config", `{kv_connector: NixlConnector}`}, 2, "Invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(vllmStandin, tc.args...)
			cmd.Env = append(os.Environ(), "STANDIN_FACTS="+facts, "STANDIN_PARSE_ONLY=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("vllm %s: exit %d, want %d with %q on stderr; stderr:\n%s", strings.Join(tc.args, " "), code, tc.code, tc.want, stderr.String())
			}
		})
	}
	// Without the facts the stand-in refuses to guess.
	cmd := exec.Command(vllmStandin, "serve", "m")
	cmd.Env = append(os.Environ(), "STANDIN_FACTS=", "STANDIN_PARSE_ONLY=1")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "STANDIN_FACTS") {
		t.Errorf("the stand-in without STANDIN_FACTS: %v\n%s", err, out)
	}
}
