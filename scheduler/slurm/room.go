package slurm

import (
	"context"
	"os/user"
	"strings"

	"github.com/kvsweep/kvsweep/scheduler"
)

// Room implements scheduler.Roomer: the limits (limitsFor: once per process, kept
// LimitsMaxAge in the user's cache; the controller's MaxJobCount and
// AccountingStorageEnforce, and where limits are enforced the
// association's and the QOS's MaxSubmitJobs and GrpSubmitJobs from
// sacctmgr), then one squeue counted against each: of the live tasks
// where a submit limit applies, of every job record the controller holds
// (finished ones until MinJobAge) when the submission is a quarter of
// MaxJobCount or more. No limit that could bind: no squeue, and no room
// to say (nil).
func (s *Slurm) Room(ctx context.Context, q scheduler.RoomQuery) (*scheduler.Room, error) {
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
	me := s.userName()
	var all, mine, mineQOS, qosAll, qosAcct, mineAcct, acctAll int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 4 {
			continue
		}
		all++ // a finished job's record counts until MinJobAge
		if scheduler.Terminal(NormalizeState(f[3])) {
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
	var best *scheduler.Room
	consider := func(limit, used int, what string) {
		if limit <= 0 {
			return
		}
		r := &scheduler.Room{Free: max(0, limit-used), Limit: limit, Used: used, What: what}
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

// userName is the submitting user, as squeue and sacctmgr name it: the
// process's user, else Config.User.
func (s *Slurm) userName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return s.cfg.User
}
