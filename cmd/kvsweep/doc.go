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
// collect reads every cell's result.json into the sweep's results.json
// and the history store ($KVSWEEP_STORE, else a bbolt file under the home
// directory; a team shares one on PostgreSQL, $KVSWEEP_STORE=postgres://...,
// docs/history-store.md), where runs are kept by sweep id:
//
//	$ kvsweep collect testrun/testdata/base --scheduler local
//	collected sweep base-1: 10 cells: 10 OK
//	$ kvsweep collect testrun/testdata/cand --scheduler local
//	collected sweep cand-1: 10 cells: 10 OK
//
// report selects runs three ways: a sweep directory, a sweep id in the
// store, or a KEY=VALUE[,KEY=VALUE] selector over the cells of every
// stored run. With --baseline and --candidate it compares two selections:
// it opens with what changed between them, then the verdicts that
// changed and the metrics whose median moved (a Mann-Whitney U test says
// how sure; --threshold and --metric-threshold say how much is a
// regression), and --check exits 3 on a regression:
//
//	$ kvsweep report --baseline base-1 --candidate cand-1 --format table --metric-threshold ttft_ms=50%
//	 what                    | baseline     | candidate
//	-------------------------+--------------+------------------------------------------------------------------------
//	 commit kvcr             | 0c1d2e3f4a5b | 9e8d7c6b5a4f
//	 spec harness.command[7] |              | {{if eq .Topology "aggregated"}}fail-case:TC-04{{else}}slow:1.3{{end}}
//	 spec name               | base         | cand
//
//	5 regression(s), 0 improvement(s): 1 verdict change(s), 16 metric(s) compared (10 unchanged), 2 cell(s) matched.
//
//	 cell                       | case  | baseline | candidate | flag
//	----------------------------+-------+----------+-----------+------------
//	 vllm-aggregated-qwen3.5-4b | TC-04 | PASS     | FAIL      | REGRESSION
//
//	 cell                               | case  | metric                   | baseline | candidate | delta   | significance | unit                | flag
//	------------------------------------+-------+--------------------------+----------+-----------+---------+--------------+---------------------+-------------------
//	 vllm-disagg-2p1d-shared-qwen3.5-4b | TC-04 | guard_promoted_s         | 0.9875   | 1.2838    | +30.01% | p=0.008 n=5  | s, lower is better  | REGRESSION (> 5%)
//	 vllm-disagg-2p1d-shared-qwen3.5-4b | TC-04 | replacement_serving_s    | 81.4174  | 105.843   | +30.00% | p=0.008 n=5  | s, lower is better  | REGRESSION (> 5%)
//	 vllm-disagg-2p1d-shared-qwen3.5-4b | TC-06 | first_correct_response_s | 1.4084   | 1.8309    | +30.00% | p=0.008 n=5  | s, lower is better  | REGRESSION (> 5%)
//	 vllm-disagg-2p1d-shared-qwen3.5-4b | TC-06 | guard_promoted_s         | 1.0223   | 1.329     | +30.00% | p=0.008 n=5  | s, lower is better  | REGRESSION (> 5%)
//	 vllm-disagg-2p1d-shared-qwen3.5-4b | TC-01 | ttft_ms                  | 183.715  | 238.83    | +30.00% | p=0.008 n=5  | ms, lower is better |
//	 vllm-disagg-2p1d-shared-qwen3.5-4b | TC-02 | ttft_ms                  | 97.1573  | 126.305   | +30.00% | p=0.008 n=5  | ms, lower is better |
//
//	10 unchanged metric(s) not shown (--all shows them).
//
// report --history is the test plan's record: a row per stored run (its
// cells narrowed by --filter, the same KEY=VALUE terms as a selector),
// with its image, commits, cases passed and the medians of --figures;
// --format html makes the page with a chart per metric and case:
//
//	$ kvsweep report --history --filter topology=disagg-2p1d-shared --figures ttft_ms,guard_promoted_s --format table
//	 date             | sweep  | topology           | engine | image        | revisions                                        | cases passed | ttft_ms    | guard_promoted_s
//	------------------+--------+--------------------+--------+--------------+--------------------------------------------------+--------------+------------+------------------
//	 2026-12-02 15:36 | base-1 | disagg-2p1d-shared | vllm   | 4f53cda18c2b | dynamo@5f3a1c0 vllm_adapter@a1b2c3d kvcr@0c1d2e3 | 20/20        | 139.408 ms | 1.01905 s
//	 2026-12-02 15:36 | cand-1 | disagg-2p1d-shared | vllm   | 4f53cda18c2b | dynamo@5f3a1c0 vllm_adapter@a1b2c3d kvcr@9e8d7c6 | 20/20        | 181.23 ms  | 1.32475 s
//
// In a CI job, kvsweep ci SPEC --out DIR does all of it: it follows the
// sweep, retries infra failures under the spec's policy, writes the step
// summary and JUnit, and exits by the gates (docs/ci.md). kvsweep logs
// shows a cell's log tails; kvsweep nodes, the nodes that failed sweeps.
// report SEL --baseline-filter engine=vllm-bare reads a run's bare-engine
// probes against its KVCR cells; kvsweep note keeps a finding with its run
// in the history store, and report --history shows it; report --history
// --spec NAME shows one spec's runs; kvsweep store forget RUN --reason TEXT
// takes a bad run out of the store, and report --history lists the removal
// with who made it, when and why. result read --spec SPEC FILE previews
// what collect will record of a cell from its harness's file. While a command
// waits (the local executor, --wait, --watch) it shows a bar on a terminal,
// a line per change otherwise, and nothing with --quiet.
//
// When a case breaks, kvsweep bisect SPEC --good REV --bad REV finds the
// commit of a component that broke it on the cluster: images built at the
// commits it probes, K at a time, the cells run and judged as ci does;
// run and ci --revisions FILE run every cell once per revision set (a PR
// stack) side by side, and the report marks the first failing set
// (docs/bisect.md).
//
// Each example above runs in the tests (doc_test.go), in order, from a
// directory that holds the repository's examples and copies of its test
// sweeps, with a history store of its own; its output must match, so
// this page stays true.
//
// Exit status: 0 success; 1 the operation failed; 2 a usage or spec error,
// or an input that is not there (nothing was done); 3 a gate of report --check or ci failed: a failed or
// INVALID case, a cell without a result, a regression, or a comparison that
// matched no cell or lost a baseline cell or case.
package main
