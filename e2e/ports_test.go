package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A port a job picked for its etcd and its NATS server but another process
// took before the service bound it (the pick and the bind are two steps):
// each service exits saying the address is in use, the job starts it again
// on fresh ports, and the cell runs against services that answer. Here
// the first pick of each is a port this test holds.
func TestServicesPortTaken(t *testing.T) {
	c := clusters(t)[0]
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcd (Debian's etcd-server, which scripts/test.sh installs): %v", err)
	}
	nats, err := exec.LookPath("nats-server")
	if err != nil {
		t.Fatalf("nats-server (scripts/test.sh installs it): %v", err)
	}
	held := make([]string, 3)
	for i := range held {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		held[i] = fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	}
	tmp := t.TempDir()
	// kvsweep as the job calls it, but the first answer of "job ports N"
	// is ports already taken.
	wrapper := filepath.Join(tmp, "kvsweep-taken")
	script := fmt.Sprintf(`#!/bin/sh
if [ "$1 $2" = "job ports" ] && mkdir %q/first-$3 2>/dev/null; then
	case $3 in 2) echo "%s %s" ;; *) echo "%s" ;; esac
	exit 0
fi
exec %q "$@"
`, tmp, held[0], held[1], held[2], binary)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	harness := filepath.Join(tmp, "harness.sh")
	if err := os.WriteFile(harness, []byte(`#!/bin/sh
set -eu
"$KVSWEEP_BIN" job etcd-wait --timeout 10s
"$KVSWEEP_BIN" job nats-wait --timeout 10s
echo "harness: services at $ETCD_ENDPOINTS $NATS_SERVER"
printf '{"schema_version": 1, "cases": [{"id": "TC-01", "verdict": "PASS", "metrics": {}}]}\n' >"$1/result.json"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`version: 1
name: ports
container: {runtime: none}
services: [etcd, nats]
harness: {command: [%q, "{{.CellDir}}"], cases_flag: ""}
topologies: {aggregated: {resources: {gpus_per_node: 0, cpus_per_task: 1, mem: 200M, time: 5m}}}
geometries: {g: {flags: {model: m}}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`, harness)
	path := writeSpec(t, tmp, spec)
	dir := filepath.Join(tmp, "sweep")
	env := []string{"KVSWEEP_BIN=" + wrapper, "KVSWEEP_ETCD_BIN=" + etcd, "KVSWEEP_NATS_BIN=" + nats}
	cells := runCompleted(t, c, env, path, dir, "--sweep-id", fmt.Sprintf("ports-%d", time.Now().UnixNano()%1e9))
	log := cellLog(dir, cells[0])
	for _, want := range []string{
		"kvsweep: etcd's port " + held[0] + " or " + held[1] + " was taken before it bound it; starting it on others",
		"kvsweep: NATS's port " + held[2] + " was taken before it bound it; starting it on another",
		"harness: services at http://127.0.0.1:",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the job's log lacks %q:\n%s", want, log)
		}
	}
	for _, p := range held {
		if strings.Contains(log, "harness: services at") && strings.Contains(log[strings.Index(log, "harness: services at"):], ":"+p+" ") {
			t.Errorf("the harness was given the taken port %s:\n%s", p, log)
		}
	}
	waitGone(t, "(etcd|nats-server) .*"+dir, "services outlived their jobs")
}
