package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/kvsweep/kvsweep/sweep"
)

// pace leaves in chosen only the cells the queue has room for, when the
// scheduler's queue has limits (a Roomer): the first ones in the
// manifest's order. The others wait, said in the report and, so that
// whoever follows the sweep submits them as room appears, in the journal
// (once). After sbatch refused cells for a limit kvsweep could not read,
// at most the journal's Fit go at once.
func pace(ctx context.Context, j *sweep.Journal, m *sweep.Manifest, chosen map[string][]sweep.Cell, sched Scheduler, opts SubmitOptions, rep *SubmitReport, recs []sweep.Record) error {
	r, ok := sched.(Roomer)
	total := 0
	for _, cells := range chosen {
		total += len(cells)
	}
	if !ok || total == 0 {
		return nil
	}
	q := RoomQuery{MaxQueued: cmp.Or(opts.MaxQueued, m.MaxQueued), QOS: cmp.Or(opts.Overrides["qos"], m.QOS),
		Account: cmp.Or(opts.Overrides["account"], m.Account), Cells: total}
	room, err := r.Room(ctx, q)
	if err != nil {
		return fmt.Errorf("asking how much room the queue has: %w", err)
	}
	rep.Room = room
	free := total
	if room != nil {
		free = room.Free
	}
	why := ""
	if room != nil {
		why = room.String()
	}
	if fit := sweep.Fit(recs); fit > 0 && fit < free {
		free = fit
		rep.Refused = fmt.Sprintf("at most %d cells at once since sbatch refused twice as many for a submit limit", fit)
		why = rep.Refused
	}
	if total <= free {
		return nil
	}
	rep.Waiting = total - free
	for _, job := range m.Jobs {
		cells := chosen[job.Name]
		keep := min(free, len(cells))
		chosen[job.Name], free = cells[:keep], free-keep
	}
	if sweep.Paced(recs) {
		return nil
	}
	return j.Append(sweep.Record{Type: sweep.RecWaiting, Note: fmt.Sprintf("%d cells wait for room in the queue (%s)", rep.Waiting, why)})
}

// noRoom reports whether err is the cluster refusing a submission for a
// submit limit of the user's queue (RefusedError.NoRoom): no room in the
// queue yet, not a failure of the cells.
func noRoom(err error) bool {
	var re *RefusedError
	return errors.As(err, &re) && re.NoRoom && !re.Transient
}
