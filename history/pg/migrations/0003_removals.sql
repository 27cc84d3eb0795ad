-- kvsweep history store, schema version 3: the runs taken out of the
-- store (kvsweep store forget), with who removed each, when and why, so
-- that the history says a run is missing on purpose. A removal outlives
-- its run: there is no foreign key to kvsweep.runs.

CREATE TABLE kvsweep.removals (
    id         bigserial PRIMARY KEY,            -- the order they were made
    sweep      text NOT NULL,                    -- the sweep id of the run removed
    name       text NOT NULL,                    -- its spec's name
    ref        text NOT NULL,
    run_date   timestamptz NOT NULL,
    cells      integer NOT NULL,
    removed_by text NOT NULL,
    removed_at timestamptz NOT NULL,
    reason     text NOT NULL,
    doc        bytea NOT NULL                    -- the removal as kvsweep reads it back
);
CREATE INDEX removals_name ON kvsweep.removals (name, run_date);
