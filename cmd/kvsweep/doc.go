// Command kvsweep builds the KVCR quick-start image and runs test sweeps
// (engine x topology x hybrid geometry x test cases) on Slurm, on
// Kubernetes or locally.
//
// Usage:
//
//	kvsweep <command> [flags] [args]
//	kvsweep help <command>
//
// A sweep spec expands to cells; plan shows them without writing anything:
//
//	$ kvsweep plan examples/quickstart.yaml
//	 id           | name                               | engine | topology           | geometry   | cases                   | nodes x gpus | time
//	--------------+------------------------------------+--------+--------------------+------------+-------------------------+--------------+----------
//	 ac432f5e3d61 | vllm-aggregated-qwen3.5-4b         | vllm   | aggregated         | qwen3.5-4b | TC-01..TC-06            | 1 x 2        | 00:02:00
//	 ed4cea01b5dd | vllm-disagg-2p1d-shared-qwen3.5-4b | vllm   | disagg-2p1d-shared | qwen3.5-4b | TC-01..TC-06            | 1 x 2        | 00:02:00
//	 c1f433916818 | sglang-aggregated-qwen3.5-4b       | sglang | aggregated         | qwen3.5-4b | TC-01,TC-02,TC-03,TC-05 | 1 x 2        | 00:02:00
//	3 cells in 2 job arrays, 0.2 GPU-hours requested
//
// render writes the sweep directory, submit hands it to Slurm (or the local
// executor), status follows it, collect reads every cell's result.json and
// report turns runs into tables. status of a sweep that ran:
//
//	$ kvsweep status testrun/testdata/mixed --scheduler local
//	 id           | name                                           | job | state     | exit  | elapsed  | nodes     | reason
//	--------------+------------------------------------------------+-----+-----------+-------+----------+-----------+--------
//	 7398c077bd4c | vllm-aggregated-qwen3.5-4b-sim-pass            | 1_0 | COMPLETED | 0:0   | 00:00:01 | localhost |
//	 5e7d218443b2 | vllm-aggregated-qwen3.5-4b-sim-fail-case-tc-04 | 1_1 | FAILED    | 1:0   | 00:00:01 | localhost |
//	 3f57e23d9fd3 | vllm-aggregated-qwen3.5-4b-sim-exit-3          | 1_2 | FAILED    | 3:0   | 00:00:01 | localhost |
//	 8aeeb981ff70 | vllm-aggregated-qwen3.5-4b-sim-no-result       | 1_3 | COMPLETED | 0:0   | 00:00:01 | localhost |
//	 36cfb723024c | vllm-aggregated-qwen3.5-4b-sim-garbage         | 1_4 | COMPLETED | 0:0   | 00:00:00 | localhost |
//	 0679c50a248f | vllm-aggregated-qwen3.5-4b-sim-sleep-30        | 1_5 | TIMEOUT   | 143:0 | 00:00:03 | localhost |
//	6 cells: 3 COMPLETED, 2 FAILED, 1 TIMEOUT
//
// In a CI job, kvsweep ci SPEC --out DIR does all of it: it follows the
// sweep, retries infra failures under the spec's policy, writes the step
// summary and JUnit, and exits by the gates (docs/ci.md). kvsweep logs
// shows a cell's log tails; kvsweep nodes, the nodes that failed sweeps.
// report SEL --baseline-filter engine=vllm-bare reads a run's bare-engine
// probes against its KVCR cells; kvsweep note keeps a finding with its run
// in the history store, and report --history shows it. While a command
// waits (the local executor, --wait, --watch) it shows a bar on a terminal,
// a line per change otherwise, and nothing with --quiet.
//
// Each example above runs in the tests (doc_test.go) from the repository
// root, and its output must match, so this page stays true.
//
// Exit status: 0 success; 1 the operation failed; 2 a usage or spec error,
// or an input that is not there (nothing was done); 3 a gate of report --check or ci failed: a failed or
// INVALID case, a cell without a result, a regression, or a comparison that
// matched no cell or lost a baseline cell or case.
package main
