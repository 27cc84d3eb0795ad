package slurm

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/kvsweep/kvsweep/scheduler"
)

// NodePlatforms implements scheduler.Platformer: the nodes of the
// partition (sinfo -N; the default partition when q.Partition is empty),
// those with q.Constraint's feature when it is one, each node's
// platform from its Arch (scontrol show node: slurmd reports the node's
// uname -m) or, over it, from a feature that names one (x86_64, amd64,
// aarch64, arm64: a site's own word for its nodes).
func (s *Slurm) NodePlatforms(ctx context.Context, q scheduler.PlatformQuery) ([]scheduler.NodePlatform, error) {
	args := []string{"-N", "-h", "-o", "%N|%P|%f"}
	if q.Partition != "" {
		args = append(args, "-p", q.Partition)
	}
	out, err := s.run(ctx, "sinfo", args...)
	if err != nil {
		return nil, err
	}
	nodes, err := parseNodeFeatures(out, q)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, nil
	}
	if out, err = s.run(ctx, "scontrol", "-o", "show", "node"); err != nil {
		return nil, err
	}
	arch, err := parseNodeArch(out)
	if err != nil {
		return nil, err
	}
	return nodePlatforms(nodes, arch)
}

// maxNodeOutput bounds what sinfo and scontrol may print of the nodes.
const maxNodeOutput = 64 << 20

var (
	nodeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	featureRE  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._:+-]{0,127}$`)
	archRE     = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)
)

// nodeFeatures is a node of the partition with its features.
type nodeFeatures struct {
	name     string
	features []string
}

// parseNodeFeatures reads sinfo -N -h -o '%N|%P|%f': the nodes of the
// partition asked for (of the default one, marked *, when none is),
// those with the constraint's feature when the constraint is one name.
func parseNodeFeatures(out []byte, q scheduler.PlatformQuery) ([]nodeFeatures, error) {
	if len(out) > maxNodeOutput {
		return nil, fmt.Errorf("sinfo -N printed %d bytes of nodes, over %d", len(out), maxNodeOutput)
	}
	var nodes []nodeFeatures
	seen := map[string]bool{}
	for i, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 || !nodeNameRE.MatchString(f[0]) {
			return nil, fmt.Errorf("sinfo -N output:%d:1: %q: expected NODE|PARTITION|FEATURES, a node name of letters, digits, '.', '_' and '-'", i+1, line)
		}
		if (q.Partition == "" && !strings.HasSuffix(f[1], "*")) || seen[f[0]] {
			continue
		}
		n := nodeFeatures{name: f[0]}
		if f[2] != "(null)" && f[2] != "" {
			n.features = strings.Split(f[2], ",")
		}
		for _, ft := range n.features {
			if !featureRE.MatchString(ft) {
				return nil, fmt.Errorf("sinfo -N output:%d:%d: node %s: feature %q: expected a name of letters, digits and '._:+-'", i+1, len(f[0])+len(f[1])+3, f[0], ft)
			}
		}
		if featureRE.MatchString(q.Constraint) && !slices.Contains(n.features, q.Constraint) {
			continue
		}
		seen[f[0]] = true
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// parseNodeArch reads scontrol -o show node: each node's Arch ("" where
// slurmd has not said: "(null)").
func parseNodeArch(out []byte) (map[string]string, error) {
	if len(out) > maxNodeOutput {
		return nil, fmt.Errorf("scontrol show node printed %d bytes, over %d", len(out), maxNodeOutput)
	}
	arch := map[string]string{}
	for i, line := range strings.Split(string(out), "\n") {
		var name, a string
		hasArch := false
		for _, w := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(w, "NodeName="); ok && name == "" {
				name = v
			}
			if v, ok := strings.CutPrefix(w, "Arch="); ok && !hasArch {
				a, hasArch = v, true
			}
		}
		if name == "" {
			continue
		}
		if a == "(null)" {
			a = ""
		}
		if a != "" && !archRE.MatchString(a) {
			return nil, fmt.Errorf("scontrol show node output:%d:%d: node %s: Arch=%q: expected a machine name as uname -m prints it (x86_64, aarch64)", i+1, strings.Index(line, "Arch=")+1, name, a)
		}
		arch[name] = a
	}
	return arch, nil
}

// nodePlatforms is each node's platform: a feature naming one over its
// Arch; a node whose features name two is refused.
func nodePlatforms(nodes []nodeFeatures, arch map[string]string) ([]scheduler.NodePlatform, error) {
	out := make([]scheduler.NodePlatform, 0, len(nodes))
	for _, n := range nodes {
		np := scheduler.NodePlatform{Node: n.name}
		if a := arch[n.name]; a != "" {
			np.Platform, np.From = scheduler.MachinePlatform(a), "Arch="+a
		}
		var byFeature []string
		for _, ft := range n.features {
			switch ft {
			case "x86_64", "amd64", "aarch64", "arm64":
				byFeature = append(byFeature, ft)
				np.Platform, np.From = scheduler.MachinePlatform(ft), "feature "+ft
			}
		}
		for _, ft := range byFeature {
			if scheduler.MachinePlatform(ft) != np.Platform {
				return nil, fmt.Errorf("node %s: its features %s name two platforms: expected one (x86_64 or amd64, aarch64 or arm64)", n.name, strings.Join(byFeature, ", "))
			}
		}
		out = append(out, np)
	}
	return out, nil
}
