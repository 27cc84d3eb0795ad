package scheduler

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strconv"
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

// slurmLimits are the limits that apply to one user, QOS and account.
type slurmLimits struct {
	maxJobCount int
	enforced    bool // AccountingStorageEnforce has limits (or safe)
	qos         string
	qosPerUser  int // QOS MaxSubmitJobsPerUser
	qosPerAcct  int // QOS MaxSubmitJobsPerAccount
	qosGroup    int // QOS GrpSubmitJobs
	account     string
	assocMax    int // the association's MaxSubmitJobs
	assocGroup  int // the association's GrpSubmitJobs
}

// Room implements Roomer: the limits (read once per process: the
// controller's MaxJobCount and AccountingStorageEnforce, and where limits
// are enforced the association's and the QOS's MaxSubmitJobs and
// GrpSubmitJobs from sacctmgr), then one squeue counted against each: of
// the live tasks where a submit limit applies, of every job record the
// controller holds (finished ones until MinJobAge) when the submission is
// a quarter of MaxJobCount or more. No limit that could bind: no squeue,
// and no room to say (nil).
func (s *Slurm) Room(ctx context.Context, q RoomQuery) (*Room, error) {
	lim, err := s.limitsFor(ctx, q)
	if err != nil {
		return nil, err
	}
	limited := q.MaxQueued > 0 || lim.enforced && lim.qosPerUser+lim.qosPerAcct+lim.qosGroup+lim.assocMax+lim.assocGroup > 0
	records := q.Cells*4 >= lim.maxJobCount
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
		if f[1] == lim.qos {
			qosAll++
			if f[2] == lim.account {
				qosAcct++
			}
		}
		if f[2] == lim.account {
			acctAll++
		}
		if f[0] != me {
			continue
		}
		mine++
		if f[1] == lim.qos {
			mineQOS++
		}
		if f[2] == lim.account {
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
		consider(lim.maxJobCount, all, "MaxJobCount")
	}
	consider(q.MaxQueued, mine, "max_queued")
	if lim.enforced {
		consider(lim.qosPerUser, mineQOS, "QOS "+lim.qos+" MaxSubmitJobsPerUser")
		consider(lim.qosPerAcct, qosAcct, "QOS "+lim.qos+" MaxSubmitJobsPerAccount")
		consider(lim.qosGroup, qosAll, "QOS "+lim.qos+" GrpSubmitJobs")
		consider(lim.assocMax, mineAcct, "account "+lim.account+" MaxSubmitJobs")
		consider(lim.assocGroup, acctAll, "account "+lim.account+" GrpSubmitJobs")
	}
	return best, nil
}

// limitsFor reads the limits for q once per process.
func (s *Slurm) limitsFor(ctx context.Context, q RoomQuery) (*slurmLimits, error) {
	s.limitsMu.Lock()
	defer s.limitsMu.Unlock()
	key := q.QOS + "|" + q.Account
	if l, ok := s.limits[key]; ok {
		return l, nil
	}
	conf, err := s.config(ctx, "MaxJobCount", "AccountingStorageEnforce")
	if err != nil {
		return nil, err
	}
	l := &slurmLimits{maxJobCount: 10000, qos: q.QOS, account: q.Account}
	if n, err := strconv.Atoi(conf["maxjobcount"]); err == nil {
		l.maxJobCount = n
	}
	enforce := strings.ToLower(conf["accountingstorageenforce"])
	l.enforced = strings.Contains(enforce, "limits") || strings.Contains(enforce, "safe")
	if l.enforced {
		if err := s.accountLimits(ctx, l); err != nil {
			return nil, err
		}
	}
	if s.limits == nil {
		s.limits = map[string]*slurmLimits{}
	}
	s.limits[key] = l
	return l, nil
}

// accountLimits fills in the association's and the QOS's submit limits
// from sacctmgr: the association of the user (and account, when given),
// its default QOS unless one is given.
func (s *Slurm) accountLimits(ctx context.Context, l *slurmLimits) error {
	out, err := s.run(ctx, "sacctmgr", "--noheader", "--parsable2", "show", "assoc", "where", "user="+userName(),
		"format=Account,DefaultQOS,MaxSubmitJobs,GrpSubmitJobs")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 4 || l.account != "" && f[0] != l.account {
			continue
		}
		if l.account == "" {
			l.account = f[0]
		}
		if l.qos == "" && f[1] != "" {
			l.qos = f[1]
		}
		l.assocMax = minLimit(l.assocMax, f[2])
		l.assocGroup = minLimit(l.assocGroup, f[3])
	}
	if l.qos == "" {
		l.qos = "normal"
	}
	out, err = s.run(ctx, "sacctmgr", "--noheader", "--parsable2", "show", "qos", "where", "name="+l.qos,
		"format=MaxSubmitJobsPerUser,MaxSubmitJobsPerAccount,GrpSubmitJobs")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Split(strings.TrimSpace(line), "|"); len(f) >= 3 {
			l.qosPerUser = minLimit(l.qosPerUser, f[0])
			l.qosPerAcct = minLimit(l.qosPerAcct, f[1])
			l.qosGroup = minLimit(l.qosGroup, f[2])
		}
	}
	return nil
}

// minLimit is the smaller of a limit and sacctmgr's value v (empty: none).
func minLimit(cur int, v string) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return cur
	}
	if cur == 0 || n < cur {
		return n
	}
	return cur
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
