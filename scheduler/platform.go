package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Platformer is a scheduler that can tell the platform of the nodes a
// partition runs jobs on, before anything is rendered (Slurm: each
// node's Arch, which slurmd reports as its uname -m, or a feature that
// names a platform; the local executor: this machine's uname -m). The
// lane pins an index of several platforms to it.
type Platformer interface {
	NodePlatforms(ctx context.Context, q PlatformQuery) ([]NodePlatform, error)
}

// PlatformQuery names the nodes a sweep's jobs may land on.
type PlatformQuery struct {
	// Partition is cluster.partition ("" for the cluster's default).
	Partition string
	// Constraint is cluster.constraint: a single feature name keeps
	// only the nodes that have it; an expression keeps them all.
	Constraint string
}

// NodePlatform is what a scheduler read of one node's platform.
type NodePlatform struct {
	Node string
	// Platform is linux/amd64, linux/arm64 or linux/MACHINE ("" when the
	// node says nothing of it).
	Platform string
	// From says where it was read: "Arch=aarch64", "feature arm64".
	From string
}

// MachinePlatform is the platform of a machine name as uname -m (and
// Slurm's Arch) or a node feature says it: x86_64 and amd64 are
// linux/amd64, aarch64 and arm64 linux/arm64; anything else
// linux/MACHINE.
func MachinePlatform(machine string) string {
	switch machine {
	case "x86_64", "amd64":
		return "linux/amd64"
	case "aarch64", "arm64":
		return "linux/arm64"
	}
	return "linux/" + machine
}

// PlatformOpener opens what a scheduler tells of its nodes' platforms
// without a sweep directory (the render asks before there is one).
type PlatformOpener func(cfg Config) Platformer

var platformers = map[string]PlatformOpener{}

// RegisterPlatformer adds the Platformer of the scheduler name
// (cmd/kvsweep registers slurm's and local's).
func RegisterPlatformer(name string, open PlatformOpener) { platformers[name] = open }

// OpenPlatformer is the Platformer of the scheduler name ("" is slurm),
// nil when it has none (k8s).
func OpenPlatformer(name string, cfg Config) Platformer {
	if open := platformers[cmp.Or(name, "slurm")]; open != nil {
		return open(cfg)
	}
	return nil
}

// OnePlatform is the one platform of a partition's nodes and where it
// was read ("Arch=x86_64 of kvsn1, kvsn2"). Nodes that say nothing are
// left out (and counted); nodes of two platforms are refused naming the
// nodes of each, as are none that say anything.
func OnePlatform(where string, nodes []NodePlatform) (platform, source string, err error) {
	by := map[string][]NodePlatform{}
	var silent []string
	for _, n := range nodes {
		if n.Platform == "" {
			silent = append(silent, n.Node)
			continue
		}
		by[n.Platform] = append(by[n.Platform], n)
	}
	plats := slices.Sorted(maps.Keys(by))
	switch {
	case len(nodes) == 0:
		return "", "", fmt.Errorf("%s has no nodes: set cluster.platform", where)
	case len(plats) == 0:
		return "", "", fmt.Errorf("%s: no node says its platform (no Arch, no feature naming one: %s): set cluster.platform", where, someNodes(silent))
	case len(plats) > 1:
		parts := make([]string, len(plats))
		for i, p := range plats {
			parts[i] = p + " (" + describe(by[p]) + ")"
		}
		return "", "", fmt.Errorf("%s: its nodes are of %d platforms: %s; set cluster.platform, or cluster.constraint to a feature of one platform's nodes", where, len(plats), strings.Join(parts, "; "))
	}
	source = describe(by[plats[0]])
	if len(silent) > 0 {
		source += fmt.Sprintf("; %d node(s) say nothing: %s", len(silent), someNodes(silent))
	}
	return plats[0], source, nil
}

// describe says where the nodes' platform was read, grouped by what
// said it: "Arch=aarch64 of gh1, gh2; feature arm64 of gh3".
func describe(nodes []NodePlatform) string {
	by := map[string][]string{}
	for _, n := range nodes {
		by[n.From] = append(by[n.From], n.Node)
	}
	var parts []string
	for _, from := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, from+" of "+someNodes(by[from]))
	}
	return strings.Join(parts, "; ")
}

// someNodes names up to four nodes, and how many more there are.
func someNodes(nodes []string) string {
	if len(nodes) <= 4 {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:4], ", "), len(nodes)-4)
}
