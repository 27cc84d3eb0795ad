package slurm

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvsweep/kvsweep/scheduler"
)

// Submit runs sbatch once per try. Before retrying after a transient error
// it looks for the job by name, since a timed-out sbatch may have been
// accepted: a request is submitted at most once. sbatch's refusal is a
// scheduler.RefusedError (refusal).
func (s *Slurm) Submit(ctx context.Context, r scheduler.SubmitRequest) (string, error) {
	var id string
	since := time.Now().Add(-time.Minute)
	first := true
	err := s.backoff(ctx, "sbatch", func() error {
		if !first {
			found, err := s.FindByName(ctx, r.JobName, since)
			if err == nil && len(found) > 0 {
				id = found[0]
				return nil
			}
		}
		first = false
		out, err := s.exec1(ctx, r.Dir, "sbatch", scheduler.SubmitArgs(r)...)
		if err != nil {
			return err
		}
		id, err = ParseSbatchOutput(string(out))
		return err
	})
	return id, refusal(err)
}

var submittedRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Submitted batch job (\d+)`) })

// ParseSbatchOutput reads the job id from "123", "123;cluster" (--parsable)
// or "Submitted batch job 123".
func ParseSbatchOutput(out string) (string, error) {
	out = strings.TrimSpace(out)
	if m := submittedRE().FindStringSubmatch(out); m != nil {
		return m[1], nil
	}
	id, _, _ := strings.Cut(out, ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job id", out)
	}
	return id, nil
}

// FindByName returns the (array) job ids of jobs named name, from squeue
// and, where accounting runs, sacct (jobs started since since).
func (s *Slurm) FindByName(ctx context.Context, name string, since time.Time) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	add := func(out []byte) {
		for _, line := range strings.Split(string(out), "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			ref, err := ParseJobID(line)
			if err == nil && !seen[ref.JobID] {
				seen[ref.JobID] = true
				ids = append(ids, ref.JobID)
			}
		}
	}
	out, err := s.run(ctx, "squeue", "--noheader", "--states=all", "--name="+name, "--format=%i")
	if err != nil {
		return nil, err
	}
	add(out)
	out, err = s.run(ctx, "sacct", "--noheader", "--parsable2", "-X", "--name="+name,
		"--starttime="+since.Format("2006-01-02T15:04:05"), "--format=JobID")
	if err != nil && !accountingDisabled(err) {
		return nil, err
	}
	add(out)
	return ids, nil
}
