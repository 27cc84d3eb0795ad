package scheduler

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strings"
	"sync"
)

// Room is how many more tasks the submitting user may queue now, and
// the limit that says so.
type Room struct {
	Free  int    // tasks that may be queued now (0 when the queue is full)
	Limit int    // the binding limit, in tasks
	Used  int    // what counts against it now
	What  string // the limit: "QOS gpu MaxSubmitJobsPerUser", "MaxJobCount", "max_queued"
}

func (r *Room) String() string {
	if r == nil {
		return "no limit"
	}
	return fmt.Sprintf("%s %d, %d in use", r.What, r.Limit, r.Used)
}

// RoomQuery is what a submission's room depends on.
type RoomQuery struct {
	// MaxQueued is the user's own bound on queued tasks (cluster.max_queued
	// or --max-queued), for a site whose limits the user cannot read; 0
	// for none.
	MaxQueued int
	// QOS and Account the jobs are submitted under ("" for the defaults).
	QOS, Account string
	// Cells is how many cells the submission would queue.
	Cells int
}

// Roomer is a scheduler whose queue bounds how many tasks one user may
// have queued at once (each array task counts as a job): Slurm's
// MaxSubmitJobs of the association and the QOS, and the controller's
// MaxJobCount. Submit sends what fits and leaves the rest waiting.
type Roomer interface {
	// Room is the room left now, or nil when no limit applies.
	Room(ctx context.Context, q RoomQuery) (*Room, error)
}

// Room implements Roomer: the limits (limitsFor: once per process, kept
// LimitsMaxAge in the user's cache; the controller's MaxJobCount and
// AccountingStorageEnforce, and where limits are enforced the
// association's and the QOS's MaxSubmitJobs and GrpSubmitJobs from
// sacctmgr), then one squeue counted against each: of the live tasks
// where a submit limit applies, of every job record the controller holds
// (finished ones until MinJobAge) when the submission is a quarter of
// MaxJobCount or more. No limit that could bind: no squeue, and no room
// to say (nil).
func (s *Slurm) Room(ctx context.Context, q RoomQuery) (*Room, error) {
	lim, err := s.limitsFor(ctx, q)
	if err != nil {
		return nil, err
	}
	limited := q.MaxQueued > 0 || lim.Enforced && lim.QOSPerUser+lim.QOSPerAccount+lim.QOSGroup+lim.AssocMax+lim.AssocGroup > 0
	records := q.Cells*4 >= lim.MaxJobCount
	if !limited && !records {
		return nil, nil
	}
	args := []string{"--noheader", "--array", "--format=%u|%q|%a|%T"}
	if records {
		args = append(args, "--states=all")
	}
	out, err := s.run(ctx, "squeue", args...)
	if err != nil {
		return nil, err
	}
	me := userName()
	var all, mine, mineQOS, qosAll, qosAcct, mineAcct, acctAll int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 4 {
			continue
		}
		all++ // a finished job's record counts until MinJobAge
		if Terminal(NormalizeState(f[3])) {
			continue
		}
		if f[1] == lim.QOS {
			qosAll++
			if f[2] == lim.Account {
				qosAcct++
			}
		}
		if f[2] == lim.Account {
			acctAll++
		}
		if f[0] != me {
			continue
		}
		mine++
		if f[1] == lim.QOS {
			mineQOS++
		}
		if f[2] == lim.Account {
			mineAcct++
		}
	}
	var best *Room
	consider := func(limit, used int, what string) {
		if limit <= 0 {
			return
		}
		r := &Room{Free: max(0, limit-used), Limit: limit, Used: used, What: what}
		if best == nil || r.Free < best.Free {
			best = r
		}
	}
	if records {
		consider(lim.MaxJobCount, all, "MaxJobCount")
	}
	consider(q.MaxQueued, mine, "max_queued")
	if lim.Enforced {
		consider(lim.QOSPerUser, mineQOS, "QOS "+lim.QOS+" MaxSubmitJobsPerUser")
		consider(lim.QOSPerAccount, qosAcct, "QOS "+lim.QOS+" MaxSubmitJobsPerAccount")
		consider(lim.QOSGroup, qosAll, "QOS "+lim.QOS+" GrpSubmitJobs")
		consider(lim.AssocMax, mineAcct, "account "+lim.Account+" MaxSubmitJobs")
		consider(lim.AssocGroup, acctAll, "account "+lim.Account+" GrpSubmitJobs")
	}
	return best, nil
}

// config reads keys (case-insensitive, returned lower case) from the
// slurm.conf this machine has, else from scontrol show config.
func (s *Slurm) config(ctx context.Context, keys ...string) (map[string]string, error) {
	want := map[string]bool{}
	for _, k := range keys {
		want[strings.ToLower(k)] = true
	}
	if m, ok := confValues(slurmConfPath(), want); ok {
		return m, nil
	}
	out, err := s.run(ctx, "scontrol", "show", "config")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if k = strings.ToLower(strings.TrimSpace(k)); ok && want[k] {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, nil
}

var currentUser = sync.OnceValue(func() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
})

// userName is the submitting user, as squeue and sacctmgr name it.
func userName() string { return currentUser() }
