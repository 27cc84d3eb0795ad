package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// TaskState is what a scheduler says of one task (an array task or a plain
// job), and what observed.json keeps of it.
type TaskState struct {
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	ExitCode int    `json:"exit_code"`
	Signal   int    `json:"signal,omitempty"`
	Elapsed  string `json:"elapsed,omitempty"`
	Nodes    string `json:"nodes,omitempty"`
	Source   string `json:"source"` // sacct, squeue, marker, journal
}

// OutsideTest reports whether a scheduler state ends a job for a reason
// outside the test whatever the job was doing: the node failed, the job
// was preempted, never booted, ran past its deadline or was lost.
func OutsideTest(state string) bool {
	switch state {
	case "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "LOST":
		return true
	}
	return false
}

// CellState is what the scheduler and the sweep's records say of a cell:
// its latest attempt, how many attempts there were, and how the earlier
// ones ended (oldest first, where still known).
type CellState struct {
	TaskState
	Attempts int
	Earlier  []TaskState
}

// Observed is observed.json: the terminal state of each task key ("123_4",
// "123") that a scheduler once reported. It outlives Slurm's memory where
// accounting is off (squeue forgets a job MinJobAge after it ends, and an
// exit marker cannot tell a time limit from scancel).
type Observed map[string]TaskState

// ReadObserved reads DIR/observed.json; none is an empty map.
func ReadObserved(dir string) (Observed, error) {
	m := Observed{}
	b, err := ReadFile(dir, ObservedFile, MaxObservedSize)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Observed{}, fmt.Errorf("%s: %w", filepath.Join(dir, ObservedFile), err)
	}
	return m, nil
}

// WriteObserved replaces DIR/observed.json.
func WriteObserved(dir string, m Observed) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, ObservedFile), b, 0o644)
}
