package matrix

import (
	"strings"
	"testing"
	"time"
)

func TestTelemetryGPU(t *testing.T) {
	for _, c := range []struct {
		telemetry string
		want      time.Duration
	}{
		{"telemetry: {}", DefaultGPUInterval},
		{"telemetry: {gpu: off}", 0},
		{"telemetry: {gpu: false}", 0},
		{"telemetry: {gpu: on}", DefaultGPUInterval},
		{"telemetry: {gpu: {interval: 500ms}}", 500 * time.Millisecond},
		{"telemetry:\n  gpu:\n    interval: 1m", time.Minute},
	} {
		s, err := Parse("sweep.yaml", []byte(edit(t, "name: mini", "name: mini\n"+c.telemetry)))
		if err != nil {
			t.Fatalf("%s: %v", c.telemetry, err)
		}
		if s.Telemetry.GPUInterval != c.want {
			t.Errorf("%s: %v, want %v", c.telemetry, s.Telemetry.GPUInterval, c.want)
		}
	}
	if s, err := Parse("sweep.yaml", []byte(edit(t, "name: mini", "name: mini"))); err != nil || s.Telemetry != nil {
		t.Errorf("no telemetry: %+v %v", s.Telemetry, err)
	}
	for _, c := range []struct{ telemetry, want string }{
		{"telemetry: {gpu: sometimes}", `sweep.yaml:3:18: telemetry.gpu: "sometimes" is not a GPU sampling setting (expected off, on, or {interval: 2s})`},
		{"telemetry: {gpu: {interval: 10ms}}", `sweep.yaml:3:29: telemetry.gpu.interval: "10ms" is not a sampling interval (expected a duration from 100ms to 10m, like 2s)`},
		{"telemetry: {gpu: {every: 1s}}", `sweep.yaml:3:19: telemetry.gpu: unknown key "every" (expected one of: interval)`},
		{"telemetry: {gpu: [1s]}", `sweep.yaml:3:18: telemetry.gpu: expected a scalar, got a list`},
	} {
		_, err := Parse("sweep.yaml", []byte(edit(t, "name: mini", "name: mini\n"+c.telemetry)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.telemetry, err, c.want)
		}
	}
}
