package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kvsweep/kvsweep/gpustat"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/telemetry"
)

// payload is what a hostile sweep puts in a string: a title change, a
// screen clear, an 8-bit CSI, a right-to-left override, a carriage
// return and a NUL, around text the view shows.
func payload(name string) string {
	return "\x1b]0;owned\x07" + name + "\x1b[2J\x9b31m\u202e\r\x00!"
}

// hostile sets every string in v (a struct, through its embedded
// structs and slices) to payload(its field's name).
func hostile(v reflect.Value, name string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(payload(name))
	case reflect.Struct:
		for i := range v.NumField() {
			hostile(v.Field(i), v.Type().Field(i).Name)
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := range v.Len() {
			hostile(v.Index(i), name)
		}
	}
}

// drawnClean fails the test when v holds what would drive a terminal.
func drawnClean(t *testing.T, what, v string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07", "\x9b", "\u202e", "\r", "\x00"} {
		if strings.Contains(v, bad) {
			t.Errorf("%s: the view holds %q:\n%q", what, bad, v)
		}
	}
}

// Every string of a sweep the view shows (the directory, the sweep id,
// each field of a cell's status, the poll's error, the log names and
// tail, the telemetry's names and note, the GPUs' note, the question,
// the message) reaches the screen without escape sequences or control
// characters, its text kept.
func TestHostileSweepIsDrawnClean(t *testing.T) {
	var c scheduler.CellStatus
	hostile(reflect.ValueOf(&c).Elem(), "cell")
	c.State = scheduler.StateRunning // c can be cancelled: the question shows
	c.Name = payload("Name")
	var d Detail
	hostile(reflect.ValueOf(&d).Elem(), "detail")
	d.Tail = payload("tail1") + "\n" + payload("tail2") + "\n"
	d.Log, d.LogErr = d.Logs[0], ""
	d.Figures = []telemetry.Figure{{Name: payload("figName"), Unit: payload("figUnit"), Value: 0.5}}
	src := &fakeSource{detail: d, snap: Snapshot{At: time.Unix(0, 0), Sweeps: []Sweep{{
		Dir: payload("Dir"), ID: payload("ID"), Err: errors.New(payload("Err")), Cells: []scheduler.CellStatus{c},
		GPU: map[string]gpustat.Summary{c.ID: {Note: payload("gpuNote"), GPUs: []gpustat.GPU{{UUID: payload("uuid")}}}},
	}}}}
	m := newModel(src, time.Second)
	step(m, tea.WindowSizeMsg{Width: 400, Height: 40})
	step(m, pollMsg{snap: src.snap})
	v := m.View()
	drawnClean(t, "the view", v)
	for _, want := range []string{"Dir", "ID", "Err", "Name", "tail1", "tail2", "gpuNote", "figName", "figUnit"} {
		if !strings.Contains(v, want) {
			t.Errorf("%s is not shown:\n%s", want, v)
		}
	}
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("c")})
	if v := m.View(); !strings.Contains(v, "cancel cell Name") {
		t.Errorf("no question:\n%s", v)
	} else {
		drawnClean(t, "the question", v)
	}
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("n")})
	drawnClean(t, "the message", m.View())
	src.detail.Figures, src.detail.LogErr = []telemetry.Figure(nil), payload("LogErr")
	step(m, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("l")})
	if v := m.View(); !strings.Contains(v, "LogErr") || !strings.Contains(v, "TelNote") {
		t.Errorf("no log error or telemetry note:\n%s", v)
	} else {
		drawnClean(t, "the log error", v)
	}
}

// A real sweep under a directory whose name drives the terminal, its
// manifest's cell names too, beside a sweep whose manifest has such a
// sweep id: the first is drawn clean, the second is refused with where
// its sweep_id is.
func TestHostileManifestIsDrawnClean(t *testing.T) {
	base := t.TempDir()
	evil := filepath.Join(base, "sweep\x1b]0;owned\x07\x1b[2J")
	sweeptest.Must(t, os.Rename(sweeptest.Copy(t, "mixed"), evil))
	edit := func(dir string, f func(map[string]any)) []byte {
		p := filepath.Join(dir, "manifest.json")
		b, err := os.ReadFile(p)
		sweeptest.Must(t, err)
		var m map[string]any
		sweeptest.Must(t, json.Unmarshal(b, &m))
		f(m)
		b, err = json.MarshalIndent(m, "", "  ")
		sweeptest.Must(t, err)
		sweeptest.Must(t, os.WriteFile(p, b, 0o644))
		return b
	}
	edit(evil, func(m map[string]any) {
		for _, c := range m["cells"].([]any) {
			c := c.(map[string]any)
			c["name"] = payload(c["name"].(string))
		}
	})
	badID := sweeptest.Copy(t, "mixed")
	const id = "\x1b]0;owned\x07id\x1b[2J\u202e\r" // valid UTF-8, as JSON keeps it
	b := edit(badID, func(m map[string]any) { m["sweep_id"] = id })
	key := []byte(`"sweep_id": `)
	at := bytes.Index(b, key) + len(key)
	line, col := 1+bytes.Count(b[:at], []byte("\n")), at-bytes.LastIndexByte(b[:at], '\n')
	var out, errw bytes.Buffer
	src := newLaneSource(localLane(&out, &errw), []string{evil, badID}, time.Second)
	snap := src.Poll(context.Background())
	if len(snap.Sweeps) != 2 || snap.Sweeps[0].Err != nil || len(snap.Sweeps[0].Cells) != 6 {
		t.Fatalf("poll: %+v", snap.Sweeps)
	}
	m := newModel(src, time.Second)
	step(m, tea.WindowSizeMsg{Width: 300, Height: 40})
	step(m, pollMsg{snap: snap})
	v := m.View()
	drawnClean(t, "the view", v)
	for _, want := range []string{filepath.Join(base, "sweep (mixed-1) · 6 cells"),
		fmt.Sprintf("poll failed: %s:%d:%d: sweep id %q: expected at most 128 letters", filepath.Join(badID, "manifest.json"), line, col, id)} {
		if !strings.Contains(v, want) {
			t.Errorf("%q is not shown:\n%s", want, v)
		}
	}
}
