-- kvsweep history store, schema version 1: runs, cells, cases, metrics,
-- images and their component revisions, notes, and the views a dashboard
-- or a plain SQL query charts (docs/history-store.md).

CREATE SCHEMA IF NOT EXISTS kvsweep;

-- One row per collected sweep. doc is the run exactly as results.json
-- holds it (without notes): what kvsweep reads back. The other columns and
-- tables are the same run laid out for queries, written in the same
-- transaction.
CREATE TABLE kvsweep.runs (
    id              text PRIMARY KEY,           -- the sweep id
    name            text NOT NULL,              -- the spec's name
    ref             text NOT NULL,              -- the branch or tag it tested (kvsweep ci --ref)
    kvsweep_version text NOT NULL,
    started         timestamptz,                -- earliest cell start
    collected_at    timestamptz NOT NULL,
    run_date        timestamptz NOT NULL,       -- started, else collected_at
    cells           integer NOT NULL,
    cells_ok        integer NOT NULL,
    content_sha256  text NOT NULL,              -- of doc
    doc             bytea NOT NULL
);
CREATE INDEX runs_name_ref_date ON kvsweep.runs (name, ref, run_date);
CREATE INDEX runs_date ON kvsweep.runs (run_date);

-- Every image a cell ran, by digest, with what it was built from.
CREATE TABLE kvsweep.images (
    digest           text PRIMARY KEY,
    ref              text NOT NULL,
    source_revisions jsonb                      -- /opt/kvcr-build/source-revisions.json
);
CREATE TABLE kvsweep.image_components (
    digest    text NOT NULL REFERENCES kvsweep.images ON DELETE CASCADE,
    component text NOT NULL,
    repo      text NOT NULL,
    ref       text NOT NULL,
    commit    text NOT NULL,
    dirty     boolean NOT NULL,
    PRIMARY KEY (digest, component)
);
CREATE INDEX image_components_commit ON kvsweep.image_components (component, commit);

-- cells, cases and metrics are keyed by the run and their places in it;
-- kvsweep writes and deletes a run's rows of all four tables in one
-- transaction (foreign keys would check each of a large run's hundreds of
-- thousands of rows one by one, for nothing).
CREATE TABLE kvsweep.cells (
    run_id       text NOT NULL,
    cell_no      integer NOT NULL,              -- its place in the run
    cell_id      text NOT NULL,
    name         text NOT NULL,
    params       jsonb NOT NULL,                -- {"engine": "vllm", ...}
    outcome      text NOT NULL,                 -- OK, MISSING, INVALID, ...
    class        text NOT NULL,                 -- test or infra for a cell that did not pass
    state        text NOT NULL,                 -- the scheduler's final state
    exit_code    integer,
    image_ref    text NOT NULL,
    image_digest text NOT NULL,                 -- '' when the cell ran no image pinned by digest
    commits      jsonb NOT NULL,                -- {"kvcr": "0123abc...", "dynamo": "..."} from the image's record
    nodes        text NOT NULL,
    cluster      text NOT NULL,
    started      timestamptz,
    attempts     integer NOT NULL,
    hardware     jsonb,
    PRIMARY KEY (run_id, cell_no)
);
CREATE INDEX cells_cell_id ON kvsweep.cells (cell_id);
CREATE INDEX cells_image ON kvsweep.cells (image_digest);

CREATE TABLE kvsweep.cases (
    run_id     text NOT NULL,
    cell_no    integer NOT NULL,
    case_no    integer NOT NULL,                -- its place in the cell's result
    case_id    text NOT NULL,                   -- TC-06
    verdict    text NOT NULL,                   -- PASS, FAIL, SKIP, ERROR
    duration_s double precision NOT NULL,
    message    text NOT NULL,
    PRIMARY KEY (run_id, cell_no, case_no)
);
CREATE INDEX cases_case_id ON kvsweep.cases (case_id);

CREATE TABLE kvsweep.metrics (
    run_id    text NOT NULL,
    cell_no   integer NOT NULL,
    case_no   integer NOT NULL,
    metric    text NOT NULL,                    -- ttft_ms
    value     double precision NOT NULL,
    unit      text NOT NULL,
    direction text NOT NULL                     -- lower or higher is better ('' unknown)
);
-- No primary key: a case's metric names are unique as kvsweep writes them,
-- and a large run's rows go in faster with two indexes than with three.
CREATE INDEX metrics_run ON kvsweep.metrics (run_id, cell_no, case_no);
CREATE INDEX metrics_metric ON kvsweep.metrics (metric);

-- The test plan's findings (kvsweep note). Kept apart from runs: a sweep
-- collected again keeps its notes, and a note may come before its run.
CREATE TABLE kvsweep.notes (
    id     bigserial PRIMARY KEY,
    sweep  text NOT NULL,
    cell   text NOT NULL,                       -- '' for the whole run
    author text NOT NULL,
    time   timestamptz NOT NULL,
    text   text NOT NULL,
    sha256 text NOT NULL,                       -- of doc: the same note is stored once
    doc    bytea NOT NULL,                      -- the note as kvsweep reads it back
    UNIQUE (sweep, sha256)
);

-- One row per run x cell x case: the verdicts.
CREATE VIEW kvsweep.case_rows AS
SELECT r.id AS run_id, r.name AS run_name, r.ref, r.run_date, r.collected_at,
       c.cell_id, c.name AS cell, c.params, c.outcome, c.class, c.nodes, c.cluster,
       k.case_id, k.verdict, k.duration_s, k.message,
       c.image_ref, c.image_digest, c.commits
FROM kvsweep.cases k
JOIN kvsweep.cells c USING (run_id, cell_no)
JOIN kvsweep.runs r ON r.id = k.run_id;

-- One row per run x cell x case x metric: what a dashboard charts.
CREATE VIEW kvsweep.metric_rows AS
SELECT r.id AS run_id, r.name AS run_name, r.ref, r.run_date, r.collected_at,
       c.cell_id, c.name AS cell, c.params, c.outcome,
       k.case_id, k.verdict, m.metric, m.value, m.unit, m.direction,
       c.image_ref, c.image_digest, c.commits, c.nodes, c.cluster
FROM kvsweep.metrics m
JOIN kvsweep.cases k USING (run_id, cell_no, case_no)
JOIN kvsweep.cells c USING (run_id, cell_no)
JOIN kvsweep.runs r ON r.id = m.run_id;
