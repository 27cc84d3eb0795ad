package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/internal/cpuprof"
	"github.com/kvsweep/kvsweep/internal/fail"
	"github.com/kvsweep/kvsweep/matrix"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	exitCheck  = 3
)

// command is one subcommand: its flags and what it runs.
type command struct {
	name    string
	args    string // argument synopsis
	summary string
	help    string // paragraphs after the synopsis
	setup   func(fs *pflag.FlagSet) func(env *env, args []string) error
	subs    []*command // a group's subcommands (kvsweep image build)
}

// env is what a command reads and writes besides its flags.
type env struct {
	stdout, stderr io.Writer
}

var commands []*command

func register(cs ...*command) {
	for _, c := range cs {
		if c.subs != nil {
			c.setup = group(c.name, c.subs)
		}
	}
	commands = append(commands, cs...)
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// usagef is a mistake in how kvsweep was called (exit 2).
func usagef(format string, args ...any) error { return fail.Usagef(format, args...) }

func main() {
	stop := cpuprof.Start(os.Stderr)
	rc := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(rc)
}

func run(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		topUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "--help":
		return help(args, stdout, stderr)
	case "--version":
		args = []string{"version"}
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "kvsweep: unknown command %q; run 'kvsweep help' for the list\n", args[0])
		return exitUsage
	}
	fs := newFlagSet(c)
	runFn := c.setup(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			commandUsage(stdout, c, fs)
			return exitOK
		}
		fmt.Fprintf(stderr, "kvsweep %s: %v\nrun 'kvsweep help %s' for usage\n", c.name, err, c.name)
		return exitUsage
	}
	return exitCode(c.name, runFn(e, fs.Args()), stderr)
}

// help is "kvsweep help [COMMAND]".
func help(args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "help" {
		topUsage(stdout)
		return exitOK
	}
	c := lookup(args[1])
	if c == nil {
		fmt.Fprintf(stderr, "kvsweep: unknown command %q\n", args[1])
		return exitUsage
	}
	if len(args) > 2 && c.subs != nil {
		sub := c
		for _, s := range c.subs {
			if s.name == args[2] {
				named := *s
				named.name, sub = c.name+" "+s.name, &named
			}
		}
		if sub == c {
			fmt.Fprintf(stderr, "kvsweep: unknown command %q\n", args[1]+" "+args[2])
			return exitUsage
		}
		c = sub
	}
	fs := newFlagSet(c)
	c.setup(fs)
	commandUsage(stdout, c, fs)
	return exitOK
}

// exitCode prints err for command name and maps its kind to the exit
// status: usage and spec errors 2, a failed check 3, anything else 1.
func exitCode(name string, err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ue *fail.UsageError
	var el matrix.ErrorList
	var ce *fail.CheckError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "kvsweep %s: %v\nrun 'kvsweep help %s' for usage\n", name, err, name)
		return exitUsage
	case errors.As(err, &el):
		fmt.Fprintln(stderr, el.Error())
		return exitUsage
	case errors.As(err, &ce):
		fmt.Fprintf(stderr, "kvsweep %s: %v\n", name, err)
		return exitCheck
	case errors.Is(err, fs.ErrNotExist):
		// A missing spec, sweep directory, run or file is a usage error.
		fmt.Fprintf(stderr, "kvsweep %s: %v\n", name, err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "kvsweep %s: %v\n", name, err)
	return exitFailed
}

// printJSON writes v as indented JSON, what --format json prints.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newFlagSet(c *command) *pflag.FlagSet {
	fs := pflag.NewFlagSet("kvsweep "+c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	return fs
}

func topUsage(w io.Writer) {
	fmt.Fprint(w, `kvsweep builds the KVCR quick-start image and runs test sweeps on Slurm, on Kubernetes or locally.

Usage:
  kvsweep <command> [flags] [args]

Commands:
`)
	sorted := append([]*command(nil), commands...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'kvsweep help <command>' for a command's flags.

Exit status: 0 success, 1 the operation failed, 2 usage or spec error or a
missing input, 3 a gate of report --check or ci failed (failed or INVALID
cases, cells without a result, regressions, a comparison that matched
nothing).
`)
}

func commandUsage(w io.Writer, c *command, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: kvsweep %s %s\n\n%s\n", c.name, c.args, c.summary)
	if c.help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.Trim(c.help, "\n"))
	}
	if fs.HasFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
	}
}

// oneArg checks a command got exactly one positional argument.
func oneArg(args []string, what string) (string, error) {
	if len(args) != 1 {
		return "", usagef("expected one argument, %s; got %d", what, len(args))
	}
	return args[0], nil
}

// oneOf checks a flag value is one of allowed.
func oneOf(flag, value string, allowed ...string) error {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return usagef("--%s %q: expected one of %s", flag, value, strings.Join(allowed, ", "))
}

// group is the setup of a command made of subcommands (kvsweep image
// build, kvsweep job barrier): flags after the subcommand are its own.
func group(name string, subs []*command) func(fs *pflag.FlagSet) func(*env, []string) error {
	return func(fs *pflag.FlagSet) func(*env, []string) error {
		fs.SetInterspersed(false)
		return func(e *env, args []string) error {
			var names []string
			var sub *command
			for _, c := range subs {
				names = append(names, c.name)
				if len(args) > 0 && c.name == args[0] {
					sub = c
				}
			}
			if len(args) == 0 {
				return usagef("expected a subcommand: %s", strings.Join(names, ", "))
			}
			if sub == nil {
				return usagef("unknown subcommand %q (expected %s)", args[0], strings.Join(names, ", "))
			}
			sfs := newFlagSet(&command{name: name + " " + sub.name})
			runSub := sub.setup(sfs)
			if err := sfs.Parse(args[1:]); err != nil {
				if errors.Is(err, pflag.ErrHelp) {
					named := *sub
					named.name = name + " " + sub.name
					commandUsage(e.stdout, &named, sfs)
					return nil
				}
				return usagef("%v", err)
			}
			return runSub(e, sfs.Args())
		}
	}
}
