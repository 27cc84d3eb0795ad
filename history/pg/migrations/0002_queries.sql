-- kvsweep history store, schema version 2: what kvsweep's own queries of
-- the history select by, indexed (report --history --filter, nodes, ci
-- --baseline auto), so that they read the runs they select and no others.

-- A cell's earlier attempts (retries), as results.json holds them:
-- [{"state": "NODE_FAIL", "nodes": "n1", "class": "infra"}, ...]. Filled
-- from each stored run's document.
ALTER TABLE kvsweep.cells ADD COLUMN earlier jsonb NOT NULL DEFAULT '[]';
UPDATE kvsweep.cells c SET earlier = d.cell->'earlier'
FROM (SELECT r.id, e.n - 1 AS cell_no, e.cell
      FROM kvsweep.runs r,
           jsonb_array_elements(convert_from(r.doc, 'UTF8')::jsonb->'cells') WITH ORDINALITY AS e(cell, n)) d
WHERE c.run_id = d.id AND c.cell_no = d.cell_no AND jsonb_typeof(d.cell->'earlier') = 'array';

-- The cells of the bad-node ledger: a failure outside the test, now or in
-- an earlier attempt.
CREATE INDEX cells_infra ON kvsweep.cells (run_id)
    WHERE (class = 'infra' AND outcome <> 'OK') OR earlier @> '[{"class": "infra"}]';
-- Cell parameters: params @> '{"engine": "vllm"}'.
CREATE INDEX cells_params ON kvsweep.cells USING gin (params jsonb_path_ops);
CREATE INDEX cells_image_ref ON kvsweep.cells (image_ref);
-- The newest run of a spec and ref; the runs collected since a time.
CREATE INDEX runs_name_ref_collected ON kvsweep.runs (name, ref, collected_at);
CREATE INDEX runs_collected ON kvsweep.runs (collected_at);
