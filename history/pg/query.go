package pg

import (
	"fmt"
	"strings"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/testrun"
)

// sqlWhere is the condition on kvsweep.runs r (and its arguments) that
// selects the runs q may keep: the run's own columns, and one cell that
// matches every filter (or has a failure outside the test) for the
// cells' parts. The newest of a spec and ref is the ORDER BY of a
// subquery.
func sqlWhere(q history.Query) (string, []any) {
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if q.Named {
		conds = append(conds, "r.name = "+arg(q.Name)+" AND r.ref = "+arg(q.Ref))
	}
	if q.Spec != "" {
		conds = append(conds, "r.name = "+arg(q.Spec))
	}
	if q.Except != "" {
		conds = append(conds, "r.id <> "+arg(q.Except))
	}
	if !q.From.IsZero() {
		conds = append(conds, "r.run_date >= "+arg(q.From))
	}
	if !q.To.IsZero() {
		conds = append(conds, "r.run_date <= "+arg(q.To))
	}
	if !q.CollectedSince.IsZero() {
		conds = append(conds, "r.collected_at >= "+arg(q.CollectedSince))
	}
	if len(q.Filters) > 0 {
		var cell []string
		for _, f := range q.Filters {
			cell = append(cell, filterSQL(f, arg))
		}
		conds = append(conds, "EXISTS (SELECT 1 FROM kvsweep.cells c WHERE c.run_id = r.id AND "+strings.Join(cell, " AND ")+")")
	}
	if q.InfraFailures {
		// history.InfraFailure: a cell whose job had not ended when it
		// was collected is none (the partial index cells_infra still
		// answers: this condition implies its predicate).
		conds = append(conds, `EXISTS (SELECT 1 FROM kvsweep.cells c WHERE c.run_id = r.id AND ((c.class = 'infra' AND c.outcome <> 'OK' AND c.state <> ALL (`+arg(testrun.UnfinishedStates)+`)) OR c.earlier @> '[{"class": "infra"}]'))`)
	}
	if q.Newest && onlyNamed(q) {
		// The newest run is one of those collected last: the rest is
		// Apply's (the first of several collected at once).
		conds = append(conds, `r.collected_at = (SELECT max(n.collected_at) FROM kvsweep.runs n WHERE n.name = r.name AND n.ref = r.ref AND n.id <> `+arg(q.Except)+`)`)
	}
	if len(conds) == 0 {
		return "true", nil
	}
	return strings.Join(conds, " AND "), args
}

// onlyNamed reports whether q selects by spec, ref and sweep id alone
// (ci --baseline auto's query), so that its newest run is the newest of
// the spec and ref.
func onlyNamed(q history.Query) bool {
	return q.Named && q.Spec == "" && q.From.IsZero() && q.To.IsZero() && q.CollectedSince.IsZero() && len(q.Filters) == 0 && !q.InfraFailures
}

// filterSQL is the condition on a cell c that history.Match's filter f
// sets.
func filterSQL(f history.Filter, arg func(any) string) string {
	switch {
	case f.Key == "image.digest":
		return "starts_with(CASE WHEN starts_with(c.image_digest, 'sha256:') THEN substr(c.image_digest, 8) ELSE c.image_digest END, " +
			arg(strings.TrimPrefix(f.Value, "sha256:")) + ")"
	case f.Key == "image.ref":
		return "c.image_ref = " + arg(f.Value)
	case strings.HasPrefix(f.Key, "image.source_revisions."):
		comp := arg(strings.TrimPrefix(f.Key, "image.source_revisions."))
		return "coalesce(c.commits->>" + comp + ", '') <> '' AND starts_with(c.commits->>" + comp + ", " + arg(f.Value) + ")"
	case f.Value == "":
		// A cell without the parameter matches too.
		return "coalesce(c.params->>" + arg(f.Key) + ", '') = ''"
	}
	return "c.params @> jsonb_build_object(" + arg(f.Key) + "::text, " + arg(f.Value) + "::text)"
}
