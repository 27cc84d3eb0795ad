package lane

import "runtime/debug"

// Version is kvsweep's: the module version, or the VCS revision of a
// development build ("devel-REV", "-dirty" when modified), recorded in
// what a lane renders and builds.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	switch {
	case rev == "":
		return "devel"
	case dirty:
		return "devel-" + rev + "-dirty"
	}
	return "devel-" + rev
}
