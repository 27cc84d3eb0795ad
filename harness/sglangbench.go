package harness

// readSGLangBench reads one result of SGLang's bench_serving
// (--output-file, a JSON line a run appended to the file). Its keys are
// those of vLLM's bench serve, which it took them from, but for the
// total throughput (total_throughput) and the end-to-end latency
// (e2e_latency); it writes tag only after 0.5.3.post2 and only with
// --tag. readBenchServe reads both spellings.
func readSGLangBench(d doc, r *Run) error { return readBenchServe(d, r) }
