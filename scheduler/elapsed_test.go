package scheduler

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

func TestFormatElapsed(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                          "00:00:00",
		1400 * time.Millisecond:    "00:00:01",
		83 * time.Minute:           "01:23:00",
		26*time.Hour + time.Second: "1-02:00:01",
		-time.Second:               "00:00:00",
	} {
		if got := FormatElapsed(d); got != want {
			t.Errorf("FormatElapsed(%s) = %q, want %q", d, got, want)
		}
	}
}

// A cell cancelled before it ran shows no exit status (Slurm's 0:0 means
// nothing there); one cancelled while running shows its signal.
func TestStatusCancelledWhileQueued(t *testing.T) {
	cells := []CellStatus{
		{ID: "a", Name: "queued", Task: "1_0", TaskState: sweep.TaskState{State: StateCancelled, Reason: "cancelled while queued"}},
		{ID: "b", Name: "running", Task: "1_1", TaskState: sweep.TaskState{State: StateCancelled, Signal: 15, Elapsed: "00:00:04"}},
	}
	var b bytes.Buffer
	if err := WriteStatus(&b, cells, "table"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[2], "cancelled while queued") {
		t.Errorf("queued row: %q", lines[2])
	}
	if strings.Contains(lines[2], "0:0") {
		t.Errorf("a cell that never ran shows an exit status: %q", lines[2])
	}
	if !strings.Contains(lines[3], "0:15") {
		t.Errorf("running row lacks its signal: %q", lines[3])
	}
}
