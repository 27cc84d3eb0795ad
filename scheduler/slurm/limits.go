package slurm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kvsweep/kvsweep/scheduler"
	"github.com/kvsweep/kvsweep/sweep"
)

// slurmLimits are the limits that apply to one user, QOS and account.
type slurmLimits struct {
	MaxJobCount   int    `json:"max_job_count"`
	Enforced      bool   `json:"enforced"` // AccountingStorageEnforce has limits (or safe)
	QOS           string `json:"qos"`
	QOSPerUser    int    `json:"qos_per_user"`    // QOS MaxSubmitJobsPerUser
	QOSPerAccount int    `json:"qos_per_account"` // QOS MaxSubmitJobsPerAccount
	QOSGroup      int    `json:"qos_group"`       // QOS GrpSubmitJobs
	Account       string `json:"account"`
	AssocMax      int    `json:"assoc_max"`   // the association's MaxSubmitJobs
	AssocGroup    int    `json:"assoc_group"` // the association's GrpSubmitJobs
}

// LimitsMaxAge is how long the limits read from the accounting database
// are taken from the user's cache before they are read again. Limits are
// set by administrators and change rarely; reading them costs a round
// trip to slurmdbd per query (a quarter of a second on the test cluster),
// ten times a 1,000-cell submission's sbatch calls. A limit lowered within
// this age is met as sbatch's refusal, which submit takes as no room yet.
const LimitsMaxAge = 5 * time.Minute

// maxLimitsCache bounds the limits cache read.
const maxLimitsCache = 1 << 20

// limitsCacheFile is what the limits cache holds: by QOS and account.
type limitsCacheFile struct {
	Entries map[string]limitsEntry `json:"entries"`
}

type limitsEntry struct {
	Time   time.Time    `json:"time"`
	Limits *slurmLimits `json:"limits"`
}

// limitsFor is the limits for q: read once per process, and between
// processes shared for LimitsMaxAge through the user's cache (beside the
// shared polls, keyed the same way: user, slurm.conf and the scheduler's
// environment).
func (s *Slurm) limitsFor(ctx context.Context, q scheduler.RoomQuery) (*slurmLimits, error) {
	s.limitsMu.Lock()
	defer s.limitsMu.Unlock()
	key := q.QOS + "|" + q.Account
	if l, ok := s.limits[key]; ok {
		return l, nil
	}
	path := s.cachePath("limits")
	l := cachedLimits(path, key, time.Now())
	if l == nil {
		var err error
		if l, err = s.readLimits(ctx, q); err != nil {
			return nil, err
		}
		storeLimits(path, key, l, time.Now())
	}
	if s.limits == nil {
		s.limits = map[string]*slurmLimits{}
	}
	s.limits[key] = l
	return l, nil
}

// readLimits asks the cluster: MaxJobCount and AccountingStorageEnforce
// from its configuration, and where limits are enforced the user's
// associations and every QOS from sacctmgr, the two at once.
func (s *Slurm) readLimits(ctx context.Context, q scheduler.RoomQuery) (*slurmLimits, error) {
	conf, err := s.config(ctx, "MaxJobCount", "AccountingStorageEnforce")
	if err != nil {
		return nil, err
	}
	l := &slurmLimits{MaxJobCount: 10000, QOS: q.QOS, Account: q.Account}
	if n, err := strconv.Atoi(conf["maxjobcount"]); err == nil {
		l.MaxJobCount = n
	}
	enforce := strings.ToLower(conf["accountingstorageenforce"])
	l.Enforced = strings.Contains(enforce, "limits") || strings.Contains(enforce, "safe")
	if !l.Enforced {
		return l, nil
	}
	var assoc, qos []byte
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		assoc, err = s.run(gctx, "sacctmgr", "--noheader", "--parsable2", "show", "assoc", "where", "user="+s.userName(),
			"format=Account,DefaultQOS,MaxSubmitJobs,GrpSubmitJobs")
		return err
	})
	g.Go(func() (err error) {
		qos, err = s.run(gctx, "sacctmgr", "--noheader", "--parsable2", "show", "qos",
			"format=Name,MaxSubmitJobsPerUser,MaxSubmitJobsPerAccount,GrpSubmitJobs")
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	l.fill(string(assoc), string(qos))
	return l, nil
}

// fill sets the association's and the QOS's submit limits from sacctmgr's
// rows: the association of the user (and account, when given), its
// default QOS unless one is given, else normal.
func (l *slurmLimits) fill(assoc, qos string) {
	for _, line := range strings.Split(assoc, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 4 || l.Account != "" && f[0] != l.Account {
			continue
		}
		if l.Account == "" {
			l.Account = f[0]
		}
		if l.QOS == "" && f[1] != "" {
			l.QOS = f[1]
		}
		l.AssocMax = minLimit(l.AssocMax, f[2])
		l.AssocGroup = minLimit(l.AssocGroup, f[3])
	}
	if l.QOS == "" {
		l.QOS = "normal"
	}
	for _, line := range strings.Split(qos, "\n") {
		if f := strings.Split(strings.TrimSpace(line), "|"); len(f) >= 4 && f[0] == l.QOS {
			l.QOSPerUser = minLimit(l.QOSPerUser, f[1])
			l.QOSPerAccount = minLimit(l.QOSPerAccount, f[2])
			l.QOSGroup = minLimit(l.QOSGroup, f[3])
		}
	}
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

// cachedLimits is the cache's entry for key when younger than
// LimitsMaxAge at now, else nil. A cache it cannot read is empty.
func cachedLimits(path, key string, now time.Time) *slurmLimits {
	if path == "" {
		return nil
	}
	f := readLimitsCache(path)
	e, ok := f.Entries[key]
	if !ok || e.Limits == nil || !e.fresh(now) {
		return nil
	}
	return e.Limits
}

// storeLimits keeps l for key, dropping entries past their age. Two
// processes storing at once: the later file wins whole (it is a cache).
func storeLimits(path, key string, l *slurmLimits, now time.Time) {
	if path == "" || os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return
	}
	f := readLimitsCache(path)
	for k, e := range f.Entries {
		if !e.fresh(now) {
			delete(f.Entries, k)
		}
	}
	f.Entries[key] = limitsEntry{Time: now, Limits: l}
	if b, err := json.Marshal(f); err == nil {
		_ = sweep.WriteFileAtomic(path, b, 0o600)
	}
}

// fresh reports whether e was stored less than LimitsMaxAge before now
// (and not after it).
func (e limitsEntry) fresh(now time.Time) bool {
	return !e.Time.After(now) && now.Sub(e.Time) < LimitsMaxAge
}

func readLimitsCache(path string) *limitsCacheFile {
	f := &limitsCacheFile{}
	if b, err := sweep.ReadFile(filepath.Dir(path), filepath.Base(path), maxLimitsCache); err == nil {
		_ = json.Unmarshal(b, f)
	}
	if f.Entries == nil {
		f.Entries = map[string]limitsEntry{}
	}
	return f
}
