package sweep

import "unicode"

// The files a cell's job writes beside the harness's result, in the cell
// directory, that collect reads. Their readers live elsewhere (the
// fingerprint in package hardware, the series in package telemetry);
// their names are here with every other name of the directory, so a
// reader, the job script's templates and docs/sweep-dir.md agree on
// them.
const (
	// TelemetryFile holds the engines' Prometheus series the job scraped
	// while the cell ran (kvsweep job scrape), one JSON line a scrape.
	TelemetryFile = "telemetry.jsonl"
	// HardwareEnvFile holds KEY=VALUE lines of what the node is (node,
	// kernel, CPU, the GPUs the job sees).
	HardwareEnvFile = "hardware.env"
	// SMIFile is nvidia-smi -q -x as the job ran it, where the node has
	// nvidia-smi.
	SMIFile = "nvidia-smi.xml"
	// NCCLVersionFile holds the NCCL version of the image's Python
	// package, where it has one.
	NCCLVersionFile = "nccl-version"
	// CaseWindowsFile marks when each case ran, one JSON line an event:
	// {"case":"TC-02","event":"start","t":UNIX_MS} and the same with
	// "end". kvsweep job case writes it (with what it did to the caches
	// before a case: "cache", "steps", "error"); a harness may write the
	// start and end lines itself. Telemetry is derived per window.
	CaseWindowsFile = "case-windows.jsonl"
	// GPUSamplesFile holds the GPUs' power, utilisation, memory, clocks
	// and temperature sampled while the cell ran, one JSON line a sample.
	GPUSamplesFile = "gpu.jsonl"
	// HealthBeforeFile and HealthAfterFile hold the health counters of
	// the head node's GPUs (package gpuhealth's Snapshot, JSON) taken by
	// kvsweep job health before the harness starts and after it ends.
	HealthBeforeFile = "health-before.json"
	HealthAfterFile  = "health-after.json"
	// HealthFaultFile is written when a counter whose rise means the
	// hardware failed (an Xid, an NVLink error, ...) rose during the
	// attempt (package gpuhealth's Report, JSON): the attempt failed
	// outside the test, and watch retries it away from the node.
	HealthFaultFile = "gpu-fault"
	// HealthFaultsLog keeps, across the cell's attempts, one line of each
	// attempt's HealthFaultFile: which nodes' GPUs failed under the cell.
	HealthFaultsLog = "gpu-faults.jsonl"
)

// MaxCaseMarkID bounds a case id in case-windows.jsonl.
const MaxCaseMarkID = 64

// IsCaseMarkID says whether s may name a case in case-windows.jsonl: 1 to
// MaxCaseMarkID bytes, printable, no space. kvsweep job case refuses
// what its reader would skip.
func IsCaseMarkID(s string) bool {
	if s == "" || len(s) > MaxCaseMarkID {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return false
		}
	}
	return true
}
