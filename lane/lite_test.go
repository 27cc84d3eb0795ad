package lane

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvsweep/kvsweep/scheduler"
)

// Without the tools of the full build (a -tags lite kvsweep) what needs
// them is refused, saying what and why, before anything is written.
func TestLiteRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const body = `harness: {command: [true]}
topologies: {aggregated: {resources: {time: 1m}}}
geometries: {g: {}}
matrix: {engine: [vllm], topology: [aggregated], geometry: [g], case: [TC-01]}
`
	tagged := write("tagged.yaml", "version: 1\nname: tagged\nscheduler: local\ncontainer: {runtime: docker, image: r.example.com/x:1}\n"+body)
	pinned := write("pinned.yaml", "version: 1\nname: pinned\nscheduler: local\ncontainer: {runtime: docker, image: r.example.com/x:1, pins: pins.yaml}\n"+body)
	write("revisions.yaml", "version: 1\n")
	for _, c := range []struct {
		name, spec string
		opts       RenderOptions
		want       string
	}{
		{"digest", tagged, RenderOptions{}, "pinning the image's tag to a digest needs the registry client (--offline keeps the tag)"},
		{"pins", pinned, RenderOptions{Offline: true}, "container.pins needs the pins reader"},
		{"pins online", pinned, RenderOptions{}, "pinning the image's tag to a digest needs the registry client"},
		{"revisions", pinned, RenderOptions{Revisions: filepath.Join(dir, "revisions.yaml")}, "--revisions builds images"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Out = filepath.Join(dir, "out-"+strings.ReplaceAll(c.name, " ", "-"))
			l := &Lane{Stdout: io.Discard, Stderr: io.Discard, Tools: Tools{NoBinary: ErrLite}, Render: c.opts}
			_, err := l.Prepare(context.Background(), c.spec)
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrLite) {
				t.Fatalf("got %v, want %q and ErrLite", err, c.want)
			}
			if _, err := os.Stat(c.opts.Out); err == nil {
				t.Errorf("%s was written", c.opts.Out)
			}
		})
	}
	t.Run("lock", func(t *testing.T) {
		l := &Lane{Stdout: io.Discard, Stderr: io.Discard, Tools: Tools{NoBinary: ErrLite},
			Render: RenderOptions{Out: filepath.Join(dir, "locked"), Offline: true},
			Submit: SubmitOptions{Sched: &scheduler.Config{Name: "local"}, Lock: "etcd://127.0.0.1:1/x", Opts: scheduler.SubmitOptions{Hold: true}}}
		p, err := l.Prepare(context.Background(), tagged)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.SubmitDir(context.Background(), p.Dir, nil); err == nil || !strings.Contains(err.Error(), "--lock needs the etcd client") || !errors.Is(err, ErrLite) {
			t.Fatalf("got %v", err)
		}
	})
}
