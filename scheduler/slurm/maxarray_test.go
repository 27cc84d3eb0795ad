package slurm

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMaxArrayFromConf(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		conf string
		n    int
		ok   bool
	}{
		{"ClusterName=c\nMaxArraySize=250\n", 250, true},
		{"clustername=c\nmaxarraysize=40001 # a comment\n", 40001, true},
		{"SlurmctldHost=h MaxArraySize=7 MaxJobCount=10\n", 7, true},
		{"ClusterName=c\n# MaxArraySize=5\n", 1001, true},
		{"ClusterName=c\n", 1001, true},
		{"ClusterName=c\nInclude /etc/slurm/more.conf\nMaxArraySize=9\n", 0, false},
		{"include nodes.conf\n", 0, false},
		{"MaxArraySize=many\n", 0, false},
		{"MaxArraySize=0\n", 0, false},
		{"MaxArraySize = 5\n", 0, false},
	} {
		p := filepath.Join(dir, "slurm.conf")
		if err := os.WriteFile(p, []byte(c.conf), 0o644); err != nil {
			t.Fatal(err)
		}
		n, ok := maxArrayFromConf(p)
		if n != c.n || ok != c.ok {
			t.Errorf("%q: %d %v, want %d %v", c.conf, n, ok, c.n, c.ok)
		}
	}
	if _, ok := maxArrayFromConf(filepath.Join(dir, "none.conf")); ok {
		t.Error("a missing slurm.conf answered")
	}
	// A link out of its directory is not followed: the controller is asked.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "real.conf"), []byte("MaxArraySize=3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(other, "real.conf"), filepath.Join(dir, "link.conf")); err != nil {
		t.Fatal(err)
	}
	if _, ok := maxArrayFromConf(filepath.Join(dir, "link.conf")); ok {
		t.Error("a slurm.conf linked from elsewhere answered")
	}
}
