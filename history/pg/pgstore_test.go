package pg

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kvsweep/kvsweep/history"
	"github.com/kvsweep/kvsweep/internal/testing/pgtest"
	"github.com/kvsweep/kvsweep/internal/testing/runtest"
	"github.com/kvsweep/kvsweep/internal/testing/storetest"
	"github.com/kvsweep/kvsweep/internal/testing/sweeptest"
	"github.com/kvsweep/kvsweep/testrun"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The history store's suite, as on the bbolt file, on PostgreSQL.
func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) string { return pgtest.DB(t) })
}

// The views chart a run without kvsweep: one row per run x cell x case x
// metric, with the cell's image and commits, and one per case.
func TestViews(t *testing.T) {
	loc := pgtest.DB(t)
	st, err := Open(loc, false)
	sweeptest.Must(t, err)
	defer st.Close()
	var metrics, cases int
	for _, name := range []string{"base", "cand"} {
		r := runtest.Collected(t, name)
		sweeptest.Must(t, st.Put(r))
		for _, c := range r.Cells {
			cases += len(c.Cases)
			for _, cs := range c.Cases {
				metrics += len(cs.Metrics)
			}
		}
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, loc)
	sweeptest.Must(t, err)
	defer c.Close(ctx)
	var n, m int
	sweeptest.Must(t, c.QueryRow(ctx, `SELECT count(*) FROM kvsweep.metric_rows`).Scan(&n))
	sweeptest.Must(t, c.QueryRow(ctx, `SELECT count(*) FROM kvsweep.case_rows`).Scan(&m))
	if n != metrics || m != cases || n == 0 {
		t.Errorf("metric_rows %d (want %d), case_rows %d (want %d)", n, metrics, m, cases)
	}
	// The query docs/history-store.md shows for a TTFT panel.
	var run, engine, commit string
	var value float64
	err = c.QueryRow(ctx, `SELECT run_id, params->>'engine', coalesce(commits->>'kvcr', ''), value
FROM kvsweep.metric_rows WHERE metric = 'ttft_ms' AND case_id = 'TC-01' ORDER BY run_date, cell LIMIT 1`).Scan(&run, &engine, &commit, &value)
	sweeptest.Must(t, err)
	if run != "base-1" || engine == "" || value <= 0 {
		t.Errorf("the TTFT query: run %q engine %q kvcr %q value %v", run, engine, commit, value)
	}
}

// A database whose schema is newer than this kvsweep's is refused, by
// readers and writers, with what to do; migrate on a current one does
// nothing.
func TestSchemaVersions(t *testing.T) {
	loc := pgtest.DB(t)
	from, to, err := Migrate(loc)
	if err != nil || from != 0 || to != Version() {
		t.Fatalf("Migrate of an empty database: %d -> %d, %v", from, to, err)
	}
	if from, to, err = Migrate(loc); err != nil || from != to {
		t.Fatalf("Migrate again: %d -> %d, %v", from, to, err)
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, loc)
	sweeptest.Must(t, err)
	defer c.Close(ctx)
	_, err = c.Exec(ctx, `INSERT INTO kvsweep.schema_migrations (version, kvsweep_version) VALUES (99, 'v9.0.0')`)
	sweeptest.Must(t, err)
	for _, ro := range []bool{true, false} {
		_, err := Open(loc, ro)
		if err == nil || !strings.Contains(err.Error(), "schema version 99 (written by kvsweep v9.0.0), newer than this kvsweep's") {
			t.Errorf("read-only %v: %v", ro, err)
		}
	}
	if _, _, err := Migrate(loc); err == nil || !strings.Contains(err.Error(), "newer than this kvsweep's") {
		t.Errorf("Migrate of a newer schema: %v", err)
	}
}

// A password, in the URL or in $PGPASSWORD, is never part of a message;
// the store is named by its URL without it. A wrong database is no
// transient error: refused at once.
func TestPasswordsNotShown(t *testing.T) {
	defer func(d time.Duration) { Deadline = d }(Deadline)
	Deadline = time.Second
	t.Setenv("KVSWEEP_STORE_RETRY", "")
	t.Setenv("PGPASSWORD", "pw-from-env")
	loc := pgtest.DB(t)
	u, err := url.Parse(loc)
	sweeptest.Must(t, err)
	u.User = url.UserPassword("kvsweep", "pw-in-url")
	closed := *u
	closed.Host = "127.0.0.1:1"
	missing := *u
	missing.Path = "/no_such_database"
	for _, tc := range []struct{ loc, want string }{
		{closed.String(), "history store postgres://kvsweep@127.0.0.1:1/"},
		{missing.String(), `database "no_such_database" does not exist`},
		{"postgres://kvsweep:pw-in-url@[::1:bad/db", "history store postgres://"},
	} {
		_, err := Open(tc.loc, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", history.Redact(tc.loc), err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "pw-in-url") || strings.Contains(err.Error(), "pw-from-env")) {
			t.Errorf("a password in: %v", err)
		}
	}
	if got := history.Redact("postgres://u:pw@h/db?sslmode=require&password=x"); got != "postgres://u@h/db?sslmode=require" {
		t.Errorf("Redact: %s", got)
	}
}

// Each query docs/history-store.md shows runs on a database holding the
// committed test runs, and returns rows (a query over the last days may
// return none: the committed runs are of a fixed date).
func TestDocQueries(t *testing.T) {
	doc, err := os.ReadFile("../../docs/history-store.md")
	sweeptest.Must(t, err)
	var queries []string
	for _, block := range strings.Split(string(doc), "```sql\n")[1:] {
		q, _, _ := strings.Cut(block, "```")
		if strings.HasPrefix(q, "SELECT") {
			queries = append(queries, q)
		}
	}
	if len(queries) < 5 {
		t.Fatalf("%d queries in docs/history-store.md", len(queries))
	}
	loc := pgtest.DB(t)
	st, err := Open(loc, false)
	sweeptest.Must(t, err)
	for _, name := range []string{"base", "cand", "mixed"} {
		sweeptest.Must(t, st.Put(runtest.Collected(t, name)))
	}
	sweeptest.Must(t, st.AddNote(testrun.Note{Sweep: "base-1", Author: "tester", Time: sweeptest.Now, Text: "a finding"}))
	st.Close()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, loc)
	sweeptest.Must(t, err)
	defer c.Close(ctx)
	for _, q := range queries {
		rows, err := c.Query(ctx, q)
		sweeptest.Must(t, err)
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil {
			t.Errorf("%s: %v", q, err)
		} else if n == 0 && !strings.Contains(q, "now()") {
			t.Errorf("no rows from\n%s", q)
		}
	}
}
