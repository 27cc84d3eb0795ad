package slurm

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kvsweep/kvsweep/sweep"
)

// MaxArraySize is the cluster's MaxArraySize: from slurm.conf where this
// machine has it (the file every Slurm command here reads, and Slurm keeps
// the same on every node), else from scontrol show config, which asks the
// controller (configless clusters, a file that includes others).
func (s *Slurm) MaxArraySize(ctx context.Context) (int, error) {
	if n, ok := maxArrayFromConf(s.confPath()); ok {
		return n, nil
	}
	out, err := s.run(ctx, "scontrol", "show", "config")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "MaxArraySize" {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0, fmt.Errorf("scontrol show config: MaxArraySize %q is not a number", strings.TrimSpace(v))
			}
			return n, nil
		}
	}
	return sweep.DefaultMaxArraySize, nil
}

// confPath is the slurm.conf Slurm's commands read here.
func (s *Slurm) confPath() string {
	if s.cfg.Conf != "" {
		return s.cfg.Conf
	}
	return "/etc/slurm/slurm.conf"
}

// maxSlurmConfSize bounds the slurm.conf read for MaxArraySize.
const maxSlurmConfSize = 4 << 20

// maxArrayFromConf reads MaxArraySize from the slurm.conf at path: its
// value, Slurm's default when the file does not set it, or ok false when
// the file cannot say (unreadable, an Include, a value that is not a
// number), for the caller to ask the controller.
func maxArrayFromConf(path string) (n int, ok bool) {
	m, ok := confValues(path, map[string]bool{"maxarraysize": true})
	if !ok {
		return 0, false
	}
	v, set := m["maxarraysize"]
	if !set {
		return sweep.DefaultMaxArraySize, true
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 {
		return n, true
	}
	return 0, false
}

// confValues reads the wanted keys (lower case) of the slurm.conf at
// path, by their lower-case names; ok is false when the file cannot say
// (unreadable, or an Include that may set them elsewhere).
func confValues(path string, want map[string]bool) (map[string]string, bool) {
	b, err := sweep.ReadFile(filepath.Dir(path), filepath.Base(path), maxSlurmConfSize)
	if err != nil {
		return nil, false
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.EqualFold(fields[0], "include") {
			return nil, false
		}
		for _, f := range fields {
			k, v, _ := strings.Cut(f, "=")
			if k = strings.ToLower(k); want[k] {
				m[k] = v
			}
		}
	}
	return m, true
}

// config reads keys (case-insensitive, returned lower case) from the
// slurm.conf this machine has, else from scontrol show config.
func (s *Slurm) config(ctx context.Context, keys ...string) (map[string]string, error) {
	want := map[string]bool{}
	for _, k := range keys {
		want[strings.ToLower(k)] = true
	}
	if m, ok := confValues(s.confPath(), want); ok {
		return m, nil
	}
	out, err := s.run(ctx, "scontrol", "show", "config")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if k = strings.ToLower(strings.TrimSpace(k)); ok && want[k] {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, nil
}
