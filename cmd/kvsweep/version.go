package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/lane"
)

// version is the module version, or the VCS revision of a development build.
func version() string { return lane.Version() }

func init() { register(versionCmd) }

var versionCmd = &command{
	name:    "version",
	args:    "",
	summary: "Print the kvsweep version",
	setup: func(fs *pflag.FlagSet) func(*env, []string) error {
		return func(e *env, args []string) error {
			_, err := fmt.Fprintf(e.stdout, "kvsweep %s %s %s/%s\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		}
	},
}
