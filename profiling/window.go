package profiling

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// The state of a case's window, as files beside its lock: the window
// was opened, closed, and the case has ended.
const (
	stStarted = "started"
	stStopped = "stopped"
	stEnded   = "ended"
)

// caseState is a case's window, held under its lock.
type caseState struct {
	o    Options
	base string // profile/.case-HEX
	lock *os.File
}

// lockCase takes caseID's lock (an flock on a file of the profile
// folder), so the case's end and its window never both stop it.
func lockCase(o Options, caseID string) (*caseState, error) {
	d, err := o.dir()
	if err != nil {
		return nil, err
	}
	s := &caseState{o: o, base: filepath.Join(d, fmt.Sprintf(".case-%x", caseID))}
	f, err := os.OpenFile(s.base+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	s.lock = f
	return s, nil
}

func (s *caseState) unlock() { s.lock.Close() }

func (s *caseState) has(what string) bool {
	_, err := os.Lstat(s.base + "." + what)
	return err == nil
}

func (s *caseState) set(what string) { _ = os.WriteFile(s.base+"."+what, nil, 0o644) }

// plan is the manifest's profile plan, nil when it has none or cannot
// be read (then nothing is profiled: the case goes on).
func (o Options) plan() *sweep.ProfilePlan {
	m, err := sweep.ReadManifest(o.SweepDir)
	if err != nil {
		return nil
	}
	return m.Profile
}

// CaseStart opens caseID's window when the plan profiles it: at once,
// or after the delay in a window beside the harness (which also closes
// it after the duration). Nothing it does fails the case.
func CaseStart(ctx context.Context, o Options, caseID string) {
	o.defaults()
	p := o.plan()
	if !p.Profiled(caseID) {
		return
	}
	if p.DelayS == 0 {
		open(ctx, o, p, caseID)
	}
	if p.DelayS == 0 && p.DurationS == 0 {
		return
	}
	spawn := o.Spawn
	if spawn == nil {
		spawn = spawnWindow
	}
	if err := spawn(caseID); err != nil {
		_ = o.record(Line{Event: "skip", Case: caseID, Detail: "the profile window could not be started beside the harness: " + err.Error()})
	}
}

// CaseEnd closes caseID's window if it is open, and marks the case ended
// so a window still waiting never opens.
func CaseEnd(ctx context.Context, o Options, caseID string) {
	o.defaults()
	p := o.plan()
	if !p.Profiled(caseID) {
		return
	}
	s, err := lockCase(o, caseID)
	if err != nil {
		_ = o.record(Line{Event: "stop", Case: caseID, Detail: err.Error()})
		return
	}
	defer s.unlock()
	s.set(stEnded)
	if s.has(stStarted) && !s.has(stStopped) {
		s.set(stStopped)
		stopAll(ctx, o, p, caseID)
	}
}

// open starts caseID's window unless it was started or the case ended.
func open(ctx context.Context, o Options, p *sweep.ProfilePlan, caseID string) {
	s, err := lockCase(o, caseID)
	if err != nil {
		_ = o.record(Line{Event: "start", Case: caseID, Detail: err.Error()})
		return
	}
	defer s.unlock()
	if s.has(stEnded) {
		_ = o.record(Line{Event: "skip", Case: caseID, Detail: fmt.Sprintf("the case ended within the profile's delay of %ds: nothing was profiled", p.DelayS)})
		return
	}
	if !s.has(stStarted) && startAll(ctx, o, p, caseID) {
		s.set(stStarted)
	}
}

// Window is kvsweep job case window CASE: the delay, the window's
// opening, the duration and its closing, each given up when the case
// ends first.
func Window(ctx context.Context, o Options, caseID string) error {
	o.defaults()
	p := o.plan()
	if !p.Profiled(caseID) {
		return nil
	}
	if p.DelayS > 0 {
		if !waitUnlessEnded(ctx, o, caseID, time.Duration(p.DelayS)*time.Second) {
			open(ctx, o, p, caseID) // records that the case ended first
			return nil
		}
		open(ctx, o, p, caseID)
	}
	if p.DurationS == 0 || !waitUnlessEnded(ctx, o, caseID, time.Duration(p.DurationS)*time.Second) {
		return nil
	}
	s, err := lockCase(o, caseID)
	if err != nil {
		return err
	}
	defer s.unlock()
	if s.has(stStarted) && !s.has(stStopped) {
		s.set(stStopped)
		stopAll(ctx, o, p, caseID)
	}
	return nil
}

// waitUnlessEnded waits d; false when the case ended (or ctx) first.
func waitUnlessEnded(ctx context.Context, o Options, caseID string, d time.Duration) bool {
	ended := filepath.Join(o.CellDir, sweep.ProfileDir, fmt.Sprintf(".case-%x.%s", caseID, stEnded))
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if _, err := os.Lstat(ended); err == nil {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(min(o.Poll, time.Until(deadline))):
		}
	}
	_, err := os.Lstat(ended)
	return err != nil
}

// spawnWindow starts this binary's job case window for caseID in the
// background, its output in the profile folder; it ends with the job.
func spawnWindow(caseID string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	d := os.Getenv("KVSWEEP_CELL_DIR")
	logf, err := os.OpenFile(filepath.Join(d, sweep.ProfileDir, "window.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "job", "case", "window", "--", caseID)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	return cmd.Process.Release()
}
