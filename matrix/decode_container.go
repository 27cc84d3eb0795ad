package matrix

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/kvsweep/kvsweep/internal/yamlpos"
)

func (d *decoder) container(n ast.Node, where string, c *Container) {
	var stagingN, userN ast.Node
	d.Fields(n, where,
		yamlpos.F("runtime", func(n ast.Node, w string) { c.Runtime = d.oneOf(n, w, Runtimes) }),
		yamlpos.F("image", func(n ast.Node, w string) {
			c.Image = d.line(n, w)
			if c.Image != "" && !imageRE().MatchString(c.Image) {
				d.Errorf(n, "%s: %q is not an image reference or file (expected REGISTRY/NAME[:TAG][@sha256:...], or a path to a .sqsh or .sif file, with no spaces and not starting with '-')", w, c.Image)
			}
		}),
		yamlpos.F("workdir", func(n ast.Node, w string) {
			if c.Workdir = d.line(n, w); strings.HasPrefix(c.Workdir, "-") {
				d.Errorf(n, "%s: %q starts with '-' (expected a directory path)", w, c.Workdir)
			}
		}),
		yamlpos.F("expect", func(n ast.Node, w string) { c.Expect, c.ExpectKeys = d.expect(n, w) }),
		yamlpos.F("pins", func(n ast.Node, w string) { c.Pins = d.line(n, w) }),
		yamlpos.F("userns", func(n ast.Node, w string) { c.Userns = d.Bool(n, w) }),
		yamlpos.F("user", func(n ast.Node, w string) {
			userN = n
			if c.User = d.line(n, w); !userRE().MatchString(c.User) {
				d.Errorf(n, "%s: %q is not a user (expected submitter, root, image, or UID[:GID] in digits)", w, c.User)
			}
		}),
		yamlpos.F("staging", func(n ast.Node, w string) {
			stagingN = n
			if c.Staging = d.line(n, w); c.Staging == "" || strings.HasPrefix(c.Staging, "-") {
				d.Errorf(n, "%s: %q is not a directory (expected a path, absolute or relative to the sweep directory, or %q)", w, c.Staging, StagingNone)
			}
		}),
		yamlpos.F("mounts", func(n ast.Node, w string) {
			for i, it := range d.List(n, w) {
				wi := fmt.Sprintf("%s[%d]", w, i)
				if _, ok := d.Resolve(it).(*ast.StringNode); !ok {
					d.Errorf(it, "%s: expected a mount SRC:DST[:FLAGS] as a string, got %s (quote it in a flow list)", wi, yamlpos.KindName(d.Resolve(it)))
					continue
				}
				v := d.line(it, wi)
				parts := strings.Split(v, ":")
				if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" || strings.Contains(v, ",") {
					d.Errorf(it, "%s: bad mount %q (expected SRC:DST or SRC:DST:FLAGS, no commas)", wi, v)
				}
				c.Mounts = append(c.Mounts, v)
			}
		}),
	)
	if userN != nil && slices.Contains(StagedRuntimes, c.Runtime) && c.User != UserSubmitter && c.User != UserRoot && userRE().MatchString(c.User) {
		d.Errorf(userN, "%s: runtime %s runs the container as the submitting user (or as root inside it, user: root); %q would have no effect (it is for docker and Kubernetes)", yamlpos.Join(where, "user"), c.Runtime, c.User)
	}
	if stagingN != nil && c.Staging != StagingNone && !slices.Contains(StagedRuntimes, c.Runtime) {
		rt := cmp.Or(c.Runtime, "none")
		d.Errorf(stagingN, "%s: runtime %s imports no image file (only %s stage one); remove staging", yamlpos.Join(where, "staging"), rt, strings.Join(StagedRuntimes, ", "))
	}
}

func (d *decoder) env(n ast.Node, where string, e *Env) {
	d.Fields(n, where,
		yamlpos.F("pass", func(n ast.Node, w string) {
			for i, it := range d.List(n, w) {
				wi := fmt.Sprintf("%s[%d]", w, i)
				v, ok := d.Scalar(it, wi)
				if ok && !envRE().MatchString(v.S) {
					d.Errorf(it, "%s: %q is not an environment variable name", wi, v.S)
				}
				e.Pass = append(e.Pass, v.S)
			}
		}),
		yamlpos.F("set", func(n ast.Node, w string) {
			for _, kv := range d.Mapping(n, w) {
				wk := yamlpos.Join(w, kv.Key)
				switch {
				case !envRE().MatchString(kv.Key):
					d.Errorf(kv.KeyN, "%s: %q is not an environment variable name", w, kv.Key)
				case secretRE().MatchString(kv.Key):
					d.Errorf(kv.KeyN, "%s: %q looks like a secret; list it under env.pass so its value is taken from the environment at run time and never written", w, kv.Key)
				}
				if v, ok := d.Scalar(kv.Value, wk); ok {
					if e.Set == nil {
						e.Set = map[string]string{}
					}
					e.Set[kv.Key] = v.S
				}
			}
			e.SetKeys = slices.Sorted(maps.Keys(e.Set))
		}),
	)
}
