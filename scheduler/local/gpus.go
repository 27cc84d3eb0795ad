package local

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/kvsweep/kvsweep/sweep"
)

// gpuIDRE is a GPU id as CUDA_VISIBLE_DEVICES takes it: an index, or a
// GPU-/MIG- UUID.
var gpuIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{1,3}|(GPU|MIG)-[0-9A-Za-z-]{1,64})$`) })

// ParseGPUs reads --gpus: "0,1,3" (the ids), "all" (every GPU nvidia-smi -L
// lists; none on a machine without one), or "" (GPUs are not scheduled:
// tasks see whatever the machine has). An id twice is refused.
func ParseGPUs(spec string) ([]string, error) {
	switch spec {
	case "":
		return nil, nil
	case "all":
		return detectGPUs(), nil
	}
	var ids []string
	for _, id := range strings.Split(spec, ",") {
		id = strings.TrimSpace(id)
		if !gpuIDRE().MatchString(id) {
			return nil, fmt.Errorf("--gpus %q: %q is not a GPU id (expected indices like 0,1,3, GPU-/MIG- UUIDs, or all)", spec, id)
		}
		if slices.Contains(ids, id) {
			return nil, fmt.Errorf("--gpus %q: GPU %s is listed twice (a task must never share a GPU by accident)", spec, id)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

var nvidiaSMIRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^GPU ([0-9]+):`) })

// detectGPUs lists the indices nvidia-smi -L prints; none without it.
func detectGPUs() []string {
	out, err := exec.Command("nvidia-smi", "-L").Output()
	if err != nil {
		return []string{}
	}
	ids := []string{}
	for _, m := range nvidiaSMIRE().FindAllStringSubmatch(string(out), -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// gpuPool hands out disjoint sets of GPU ids to tasks.
type gpuPool struct {
	mu   sync.Mutex
	cond *sync.Cond
	all  []string
	free map[string]bool
}

func newGPUPool(ids []string) *gpuPool {
	p := &gpuPool{all: ids, free: map[string]bool{}}
	p.cond = sync.NewCond(&p.mu)
	for _, id := range ids {
		p.free[id] = true
	}
	return p
}

// acquire waits until n GPUs are free and takes them (in pool order); it
// gives up when ctx ends.
func (p *gpuPool) acquire(ctx context.Context, n int) ([]string, error) {
	if n > len(p.all) {
		return nil, fmt.Errorf("needs %s; the pool has %d", gpuCount(n), len(p.all))
	}
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cond.Broadcast()
	})
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		got := make([]string, 0, n)
		for _, id := range p.all {
			if p.free[id] && len(got) < n {
				got = append(got, id)
			}
		}
		if len(got) == n {
			for _, id := range got {
				p.free[id] = false
			}
			return got, nil
		}
		p.cond.Wait()
	}
}

func (p *gpuPool) release(ids []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		p.free[id] = true
	}
	p.cond.Broadcast()
}

// Admit implements scheduler.Admitter: with a GPU pool, a job whose tasks need more
// GPUs than the pool has is refused before anything is submitted, naming
// its cells, what they need and the pool.
func (l *Local) Admit(job *sweep.Job, cells []sweep.Cell) error {
	if l.GPUs == nil || job.Res.GPUsPerNode <= len(l.GPUs) {
		return nil
	}
	var names []string
	for i, c := range cells {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(cells)-3))
			break
		}
		names = append(names, c.Name+" ("+c.ID+")")
	}
	pool := strings.Join(l.GPUs, ",")
	if pool == "" {
		pool = "none: this machine has no GPU"
	}
	return fmt.Errorf("cell %s needs %s; the local GPU pool has %d (%s): give --gpus more, or run it on Slurm",
		strings.Join(names, ", "), gpuCount(job.Res.GPUsPerNode), len(l.GPUs), pool)
}

func gpuCount(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}
