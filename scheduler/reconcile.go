package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/kvsweep/kvsweep/sweep"
)

// reconcile settles unconfirmed submissions from Slurm (by job name) or,
// where Slurm has forgotten finished jobs, from the cells' exit markers.
func reconcile(ctx context.Context, j *sweep.Journal, dir string, m *sweep.Manifest, recs []sweep.Record, sched Scheduler, rep *SubmitReport) error {
	for _, s := range sweep.Submissions(recs) {
		if s.JobID != "" || s.Abandoned {
			continue
		}
		found, err := sched.FindByName(ctx, s.Intent.JobName, s.Intent.Time.Add(-time.Minute))
		if err != nil {
			return fmt.Errorf("settling unconfirmed submission %d (%s): %w", s.Intent.Seq, s.Intent.JobName, err)
		}
		if len(found) == 0 {
			found = markerJobIDs(dir, m, s.Intent)
		}
		if len(found) > 0 {
			if err := j.Append(sweep.Record{Type: sweep.RecSubmitted, Seq: s.Intent.Seq, JobID: found[0], Adopted: true}); err != nil {
				return err
			}
			rep.Adopted++
			continue
		}
		if err := j.Append(sweep.Record{Type: sweep.RecAbandoned, Seq: s.Intent.Seq, Note: "not found in Slurm"}); err != nil {
			return err
		}
		rep.Abandoned++
	}
	return nil
}

// markerJobIDs returns the array job id an exit marker of the intent's
// cells names, if one was written after the intent.
func markerJobIDs(dir string, m *sweep.Manifest, in sweep.Record) []string {
	idx, _ := sweep.ParseIndices(in.Indices)
	want := map[int]bool{}
	for _, i := range idx {
		want[i] = true
	}
	for _, c := range m.Cells {
		if c.Job != in.Job || !want[c.Index] {
			continue
		}
		mk, ok, _ := sweep.ReadExitMarker(dir, c.ID)
		if ok && mk.Started.After(in.Time.Add(-time.Minute)) {
			if mk.ArrayJobID != "" {
				return []string{mk.ArrayJobID}
			}
			return []string{mk.JobID}
		}
	}
	return nil
}

// SubmittedCells is the set of cells with a confirmed or unconfirmed
// (not abandoned) submission.
func SubmittedCells(m *sweep.Manifest, recs []sweep.Record) map[string]bool {
	out := map[string]bool{}
	for _, s := range sweep.Submissions(recs) {
		if s.Abandoned {
			continue
		}
		for _, c := range m.CellsOf(s.Intent) {
			out[c.ID] = true
		}
	}
	return out
}
