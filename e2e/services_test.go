package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/scheduler"
)

// Dynamo's services in every one-node topology, under pyxis on the test
// cluster: with services: [etcd, nats] each job starts the image's etcd
// and nats-server for its cell, and the stand-in Dynamo workers (which,
// like Dynamo v1.2.0's, stop without either) register and publish in the
// aggregated, sidecar and 2P+1D cells; the cells of an engine that says
// services: [] start none, and their workers stop naming etcd. Cells that
// share the node at once each get their own ports. Nothing outlives the
// jobs. (Two nodes: TestTwoNodesInContainers.)
func TestDynamoServices(t *testing.T) {
	c := clusters(t)[0]
	ref, digest, _ := buildTestImage(t, c)
	tmp := t.TempDir()
	spec := fmt.Sprintf(`version: 1
name: dynamo-services
container: {runtime: pyxis, image: %q}
services: [etcd, nats]
harness:
  command: [/opt/kvcr/phase1-sim.sh, --engine, "{{.Engine}}", --results-dir, "{{.CellDir}}"]
engines:
  vllm: {}
  nodeps: {services: []}
topologies:
  aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}, args: [--dynamo-workers, "2"]}
  sidecar:
    resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 10m}
    args: [--dynamo-workers, "2", --wait-file, "{{.CellDir}}/services/ready-0", --wait-file, "{{.CellDir}}/services/ready-1"]
    service: [sh, -c, 'touch "$KVSWEEP_SERVICES_DIR/ready-$KVCR_SERVICE_INDEX"; exec sleep 121']
  disagg-2p1d: {resources: {gpus_per_node: 2, cpus_per_task: 1, mem: 200M, time: 10m}, args: [--dynamo-workers, "3"]}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm, nodeps], topology: [aggregated, sidecar, disagg-2p1d], geometry: [g], case: [TC-01]}
`, ref+"@"+digest)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	defer cancelSweep(t, c, dir)
	// The nodeps cells fail: run --wait says so, which is expected here.
	_, _, _ = kvsweep(t, c, nil, "run", path, "--out", dir, "--scheduler", "slurm", "--wait", "--interval", "1s")
	cells, _, err := scheduler.Status(t.Context(), dir, c.slurm())
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 6 {
		t.Fatalf("%d cells, want 6", len(cells))
	}
	ports := map[string]string{}
	for _, cs := range cells {
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(dir, "cells", cs.ID, name))
			return string(b)
		}
		log := cellLog(dir, cs)
		if strings.HasPrefix(cs.Name, "nodeps-") {
			if cs.State == scheduler.StateCompleted || !strings.Contains(log, "dynamo worker 0: cannot connect to etcd at http://localhost:2379") {
				t.Errorf("%s without services: %s, want the worker to stop naming etcd\n%s", cs.Name, cs.State, log)
			}
			if _, err := os.Stat(filepath.Join(dir, "cells", cs.ID, "nats.log")); err == nil {
				t.Errorf("%s: a cell whose engine says services: [] started NATS", cs.Name)
			}
			continue
		}
		if cs.State != scheduler.StateCompleted {
			t.Errorf("%s: %s\n%s\netcd:\n%s\nnats:\n%s", cs.Name, cs.State, log, read("etcd.log"), read("nats.log"))
			continue
		}
		workers := 2
		if strings.Contains(cs.Name, "disagg") {
			workers = 3
		}
		for i := range workers {
			if !strings.Contains(log, fmt.Sprintf("dynamo worker %d: registered in etcd at http://127.0.0.1:", i)) {
				t.Errorf("%s: worker %d did not register:\n%s", cs.Name, i, log)
			}
		}
		if !strings.Contains(read("etcd.log"), "ready to serve client requests") || !strings.Contains(read("nats.log"), "Server is ready") {
			t.Errorf("%s: the image's services did not serve:\netcd:\n%s\nnats:\n%s", cs.Name, read("etcd.log"), read("nats.log"))
		}
		for _, l := range strings.Split(log, "\n") {
			if _, url, ok := strings.Cut(l, "events to nats://"); ok {
				if other, dup := ports[url]; dup && other != cs.ID {
					t.Errorf("cells %s and %s were given one NATS at %s", other, cs.ID, url)
				}
				ports[url] = cs.ID
			}
		}
	}
	// Nothing outlives the jobs: no etcd, no nats-server of this sweep.
	waitGone(t, "(etcd|nats-server) .*"+regexp.QuoteMeta(dir), "services outlived their jobs")
}
