package upstream

import (
	"testing"

	"github.com/kvsweep/kvsweep/profiling"
)

// profileFacts are what a profiled case's window reads from each
// release: the routes it asks, what they answer, what the engine must be
// started with (vLLM) and where the traces go (SGLang's output_dir, the
// key the window sends).
var profileFacts = map[string][]struct{ key, value string }{
	"vllm": {
		{"endpoint", profiling.StartRoute},
		{"endpoint", profiling.StopRoute},
		{"serve.flag", "--profiler-config"},
		{"profile.start_answer", "200, empty body"},
		{"profile.stop_answer", "200, empty body"},
		{"profiler_config.profiler", "torch|cuda"},
		{"profiler_config.torch_profiler_dir", "torch_profiler_dir"},
	},
	"sglang": {
		{"endpoint", profiling.StartRoute},
		{"endpoint", profiling.StopRoute},
		{"profile.start_body", profiling.OutputDirKey},
		{"profile.output_dir_default", ""},
		{"profile.trace_file", ".trace.json.gz"},
		{"profile.start_answer", ""},
		{"profile.stop_answer", ""},
		{"profile.refuses", ""},
	},
}

// Every release states the profiler routes the window asks and the body
// it sends, and each fact cites where it was read.
func TestProfileFacts(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range all {
		for _, w := range profileFacts[r.Project] {
			seen[r.Project] = true
			checkKVTierFact(t, r, w.key, w.value)
		}
	}
	for p := range profileFacts {
		if !seen[p] {
			t.Errorf("no facts for %s", p)
		}
	}
}
