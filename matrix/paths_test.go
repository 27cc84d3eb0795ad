package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A harness word made with {{.SpecDir}} must name a file beside the spec;
// a relative path to a file there is a warning naming where the harness
// runs; a word that only looks like a path (a model id) is neither.
func TestHarnessWordPaths(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "harness"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "harness", "sim.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "sweep.yaml")
	expand := func(command string) (*Spec, error) {
		t.Helper()
		s, err := Parse(file, []byte(edit(t, `[harness, --engine, "{{.Engine}}"]`, command)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Expand(s)
		return s, err
	}

	s, err := expand(`[python3, "{{.SpecDir}}/harness/sim.py", --model, Qwen/Qwen3-0.6B]`)
	if err != nil || len(s.Warnings) != 0 {
		t.Fatalf("a harness beside the spec: err %v, warnings %v", err, s.Warnings)
	}

	_, err = expand(`[python3, "--script={{.SpecDir}}/harness/nosuch.py"]`)
	want := file + `:4:22: harness.command[1]: "--script={{.SpecDir}}/harness/nosuch.py" names ` + filepath.Join(dir, "harness", "nosuch.py") + ", which does not exist"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Count(err.Error(), "\n") != 0 {
		t.Fatalf("got %v, want one error starting %s", err, want)
	}

	s, err = expand(`[python3, harness/sim.py]`)
	if err != nil || len(s.Warnings) != 1 {
		t.Fatalf("a relative path: err %v, warnings %v", err, s.Warnings)
	}
	got := s.Warnings[0].Error()
	for _, w := range []string{file + ":4:22: harness.command[1]: ", "the sweep directory (runtime none)", `write "{{.SpecDir}}/harness/sim.py"`} {
		if !strings.Contains(got, w) {
			t.Errorf("warning %q lacks %q", got, w)
		}
	}
}

// A container sees a file beside the spec only through a mount at the
// same path; a pod never does.
func TestSpecDirInContainer(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "h.sh"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ container, want string }{
		{"{runtime: docker, image: img}", "which sees it only if container.mounts mounts a directory holding it at the same path (" + dir + ":" + dir + ")"},
		{"{runtime: docker, image: img, mounts: [\"" + dir + ":" + dir + ":ro\"]}", ""},
		{"{runtime: none}", ""},
	} {
		src := edit(t, `[harness, --engine, "{{.Engine}}"]`, `[sh, "{{.SpecDir}}/h.sh"]`) + "container: " + tc.container + "\n"
		s, err := Parse(filepath.Join(dir, "sweep.yaml"), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Expand(s); err != nil {
			t.Fatal(err)
		}
		var got string
		for _, w := range s.Warnings {
			got += w.Error()
		}
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("container %s: warnings %q, want %q", tc.container, got, tc.want)
		}
	}
}

func TestHarnessWorkdir(t *testing.T) {
	for _, tc := range []struct {
		c    Container
		k8s  bool
		want string
	}{
		{Container{Runtime: "none"}, false, "the sweep directory (runtime none)"},
		{Container{Runtime: "apptainer"}, false, "the sweep directory (runtime apptainer)"},
		{Container{Runtime: "docker"}, false, "the image's WORKDIR (runtime docker)"},
		{Container{Runtime: "none"}, true, "the image's WORKDIR (scheduler k8s)"},
		{Container{Runtime: "pyxis", Workdir: "/w"}, false, "/w (container.workdir)"},
	} {
		s := &Spec{Container: tc.c, Scheduler: "slurm"}
		if tc.k8s {
			s.Scheduler = "k8s"
		}
		if got := s.HarnessWorkdir(); got != tc.want {
			t.Errorf("%+v k8s %v: %q, want %q", tc.c, tc.k8s, got, tc.want)
		}
	}
}
