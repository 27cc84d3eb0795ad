package slurm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// PollCache shares the polls of one user's followers on one cluster (the
// status --watch, run --wait and ci processes of many sweeps): one file
// holds the last answer of the controller for every job any of them
// follows, and which jobs each follows. A follower whose jobs the answer
// covers and that is younger than its interval uses it; otherwise it
// polls every followed job at once, under the file's lock, for all of
// them. So the controller sees one sacct and one squeue per interval
// whatever the number of sweeps.
type PollCache struct {
	// Path is the cache file; Path+".lock" serialises its users.
	Path string
	// MaxAge is the oldest answer this follower takes (its interval).
	MaxAge time.Duration
}

// maxPollCache bounds the cache file read.
const maxPollCache = 64 << 20

// pollCacheFile is what the cache file holds.
type pollCacheFile struct {
	Time time.Time `json:"time"`
	// Polled is every job the answer covers, by id: the name it was
	// polled under.
	Polled   map[string]string    `json:"polled"`
	Answer   *scheduler.Poll      `json:"answer"`
	Interest map[string]following `json:"interest"`
}

// following is what one follower follows, and when it last said so.
type following struct {
	Jobs  []scheduler.PollJob `json:"jobs"`
	Seen  time.Time           `json:"seen"`
	Every time.Duration       `json:"every"`
}

// Poll answers for jobs from the cache when it can, else polls through
// direct for every job followed and keeps the answer.
func (c *PollCache) Poll(ctx context.Context, jobs []scheduler.PollJob, direct func(context.Context, []scheduler.PollJob) (*scheduler.Poll, error)) (*scheduler.Poll, error) {
	unlock, err := c.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	f := c.read()
	now := time.Now()
	f.Interest[followerKey(jobs)] = following{Jobs: jobs, Seen: now, Every: c.MaxAge}
	for k, fl := range f.Interest {
		if now.Sub(fl.Seen) > 3*fl.Every+10*time.Second {
			delete(f.Interest, k) // a follower that stopped
		}
	}
	if f.Answer != nil && covers(f.Polled, jobs) && !f.Time.After(now) && now.Sub(f.Time) < c.MaxAge {
		return only(f.Answer, jobs), c.write(f)
	}
	all := union(f.Interest, jobs)
	p, err := direct(ctx, all)
	if err != nil {
		return nil, err
	}
	f.Time, f.Answer, f.Polled = now, p, map[string]string{}
	for _, j := range all {
		f.Polled[j.ID] = j.Name
	}
	return only(p, jobs), c.write(f)
}

// lock takes the cache's lock, waiting for another follower's poll.
func (c *PollCache) lock(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
		return nil, err
	}
	lf, err := os.OpenFile(c.Path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { lf.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			lf.Close()
			return nil, fmt.Errorf("poll cache %s: %w", c.Path, err)
		}
		select {
		case <-ctx.Done():
			lf.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// read reads the cache; one it cannot read is empty (it is only a cache).
func (c *PollCache) read() *pollCacheFile {
	f := &pollCacheFile{}
	if b, err := sweep.ReadFile(filepath.Dir(c.Path), filepath.Base(c.Path), maxPollCache); err == nil {
		_ = json.Unmarshal(b, f)
	}
	if f.Interest == nil {
		f.Interest = map[string]following{}
	}
	return f
}

// write replaces the cache file whole.
func (c *PollCache) write(f *pollCacheFile) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp := c.Path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.Path)
}

// followerKey names a follower by the jobs it follows.
func followerKey(jobs []scheduler.PollJob) string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID + "=" + j.Name
	}
	slices.Sort(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, ",")))
	return hex.EncodeToString(sum[:8])
}

// covers reports whether an answer polled for polled answers for jobs.
func covers(polled map[string]string, jobs []scheduler.PollJob) bool {
	for _, j := range jobs {
		if name, ok := polled[j.ID]; !ok || name != j.Name {
			return false
		}
	}
	return true
}

// union is every job followed, jobs' own names first.
func union(interest map[string]following, jobs []scheduler.PollJob) []scheduler.PollJob {
	seen := map[string]bool{}
	var out []scheduler.PollJob
	add := func(js []scheduler.PollJob) {
		for _, j := range js {
			if !seen[j.ID] {
				seen[j.ID] = true
				out = append(out, j)
			}
		}
	}
	add(jobs)
	for _, k := range slices.Sorted(maps.Keys(interest)) {
		add(interest[k].Jobs)
	}
	return out
}

// only is the part of p about jobs.
func only(p *scheduler.Poll, jobs []scheduler.PollJob) *scheduler.Poll {
	ids := map[string]bool{}
	for _, j := range jobs {
		ids[j.ID] = true
	}
	out := &scheduler.Poll{Tasks: map[string]sweep.TaskState{}, Accounting: p.Accounting}
	for k, ts := range p.Tasks {
		id, _, _ := strings.Cut(k, "_")
		if ids[id] {
			out.Tasks[k] = ts
		}
	}
	for _, f := range p.Foreign {
		id, _, _ := strings.Cut(f, " ")
		if ids[id] {
			out.Foreign = append(out.Foreign, f)
		}
	}
	return out
}

// PollCachePath is where the followers of the cluster that s's
// configuration names (its Env's SLURM_CONF=..., Conf) share their polls:
// Config.PollCache (a directory; "off" shares nothing), else the user's
// cache directory; "" when polls are not shared.
func (s *Slurm) PollCachePath() string { return s.cachePath("slurm") }

// cachePath is the file of the user's cache of kind for the cluster s's
// configuration names (see PollCachePath), "" when there is none.
func (s *Slurm) cachePath(kind string) string {
	dir := s.cfg.PollCache
	if dir == "off" {
		return ""
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "kvsweep", "polls")
	}
	key := append([]string{s.userName(), "SLURM_CONF=" + s.cfg.Conf}, s.cfg.Env...)
	sum := sha256.Sum256([]byte(strings.Join(key, "\x00")))
	return filepath.Join(dir, kind+"-"+hex.EncodeToString(sum[:8])+".json")
}
