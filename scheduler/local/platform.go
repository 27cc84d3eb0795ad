package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"github.com/kvsweep/kvsweep/scheduler"
)

// NodePlatforms implements scheduler.Platformer: the local executor's
// one node is this machine, of the platform its uname -m says.
func (l *Local) NodePlatforms(ctx context.Context, _ scheduler.PlatformQuery) ([]scheduler.NodePlatform, error) {
	out, err := exec.CommandContext(ctx, "uname", "-m").Output()
	if err != nil {
		return nil, fmt.Errorf("uname -m: %v", err)
	}
	m := strings.TrimSpace(string(out))
	if !machineRE.MatchString(m) {
		return nil, fmt.Errorf("uname -m printed %q: expected a machine name (x86_64, aarch64)", m)
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "this machine"
	}
	return []scheduler.NodePlatform{{Node: host, Platform: scheduler.MachinePlatform(m), From: "uname -m " + m}}, nil
}

var machineRE = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)
