package arch

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kvsweep/kvsweep/"

// forbidden lists, per package, the packages of this module it must not
// depend on, directly or not (docs/architecture.md says why).
var forbidden = map[string][]string{
	"sweep":          {"matrix", "render", "scheduler", "reports", "imagebuild", "templates", "coord", "provenance"},
	"scheduler":      {"matrix", "render", "reports", "imagebuild", "templates", "coord", "provenance"},
	"render":         {"scheduler", "reports", "imagebuild", "coord"},
	"render/kubejob": {"render", "scheduler", "reports", "imagebuild", "coord", "scheduler/k8s"},
	"scheduler/k8s":  {"matrix", "render", "reports", "imagebuild", "templates", "coord", "provenance"},
	"matrix":         {"sweep", "render", "scheduler", "reports", "imagebuild", "templates"},
	"reports":        {"matrix", "render", "scheduler", "imagebuild", "templates", "coord"},
	"imagebuild":     {"matrix", "sweep", "render", "scheduler", "reports", "coord"},
	"provenance":     {"sweep", "matrix", "render", "scheduler", "reports", "imagebuild", "templates", "coord"},
	"coord":          {"sweep", "matrix", "render", "scheduler", "reports", "imagebuild", "templates"},
	"rules":          {"sweep", "matrix", "render", "scheduler", "reports", "imagebuild", "templates", "coord", "provenance"},
}

// heavy are third-party trees that only the packages that need them may
// pull in: BuildKit and the registry client belong to imagebuild, etcd to
// coord.
var heavy = map[string][]string{
	"github.com/moby/buildkit":               {"imagebuild"},
	"github.com/google/go-containerregistry": {"imagebuild"},
	"go.etcd.io/etcd/client/v3":              {"coord"},
	"github.com/kaptinlin/jsonschema":        {"reports"},
	"k8s.io/client-go":                       {"scheduler/k8s"},
	"k8s.io/api":                             {"scheduler/k8s", "render/kubejob"},
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", module+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func TestPackageGraph(t *testing.T) {
	for pkg, bad := range forbidden {
		ds := deps(t, pkg)
		for _, d := range ds {
			name, ok := strings.CutPrefix(d, module)
			if !ok {
				for root, allowed := range heavy {
					if (d == root || strings.HasPrefix(d, root+"/")) && !slices.Contains(allowed, pkg) {
						t.Errorf("%s depends on %s, which belongs to %v only", pkg, d, allowed)
					}
				}
				continue
			}
			if slices.Contains(bad, name) {
				t.Errorf("%s depends on %s (docs/architecture.md)", pkg, name)
			}
		}
	}
}
