//go:build !lite

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvsweep/kvsweep/coord"
	"github.com/kvsweep/kvsweep/internal/fail"
)

// jobCommands run inside a job (the rendered two-node script calls them).
var jobCommands = []*command{
	{
		name:    "etcd-wait",
		args:    "[--endpoints E] [--timeout D] [--pid P]",
		summary: "Wait until etcd answers; fail with the last error at the deadline",
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			eps := endpointsFlag(fs)
			timeout := fs.Duration("timeout", time.Minute, "give up after this long")
			pid := fs.Int("pid", 0, "give up at once when this process (the service started) exits")
			return func(e *env, args []string) error {
				ctx, cancel := coord.WhileAlive(context.Background(), *pid)
				defer cancel()
				if err := coord.Wait(ctx, *eps, *timeout); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "etcd at %s is healthy\n", *eps)
				return nil
			}
		},
	},
	{
		name:    "nats-wait",
		args:    "[--server URL] [--timeout D] [--pid P]",
		summary: "Wait until a NATS server answers; fail with the last error at the deadline",
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			server := fs.String("server", os.Getenv("NATS_SERVER"), "the NATS server, nats://HOST:PORT (default $NATS_SERVER)")
			timeout := fs.Duration("timeout", time.Minute, "give up after this long")
			pid := fs.Int("pid", 0, "give up at once when this process (the service started) exits")
			return func(e *env, args []string) error {
				ctx, cancel := coord.WhileAlive(context.Background(), *pid)
				defer cancel()
				if err := coord.WaitNATS(ctx, *server, *timeout); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "NATS at %s is healthy\n", *server)
				return nil
			}
		},
	},
	{
		name:    "ports",
		args:    "N",
		summary: "Print N TCP ports free on this host, on one line",
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			return func(e *env, args []string) error {
				a, err := oneArg(args, "how many ports")
				if err != nil {
					return err
				}
				n, err := strconv.Atoi(a)
				if err != nil || n < 1 || n > 16 {
					return fail.Usagef("ports: %q is not a count from 1 to 16", a)
				}
				ports, err := coord.FreePorts(n)
				if err != nil {
					return err
				}
				fmt.Fprintln(e.stdout, strings.Trim(fmt.Sprint(ports), "[]"))
				return nil
			}
		},
	},
	{
		name:    "barrier",
		args:    "NAME --count N --id ID [--ttl D] [--timeout D]",
		summary: "Meet the other participants of a barrier through etcd",
		help: `Registers ID under NAME with a lease of --ttl kept alive by this process,
and returns when --count participants are present. If a registered
participant's lease expires first (its process died), every other
participant fails at once naming it; at --timeout, it fails naming who is
there.`,
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			eps := endpointsFlag(fs)
			count := fs.Int("count", 2, "participants to wait for")
			id := fs.String("id", "", "this participant's name (default: host name and pid)")
			ttl := fs.Duration("ttl", 5*time.Second, "lease of the registration: how soon a dead participant is noticed")
			timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
			return func(e *env, args []string) error {
				name, err := oneArg(args, "the barrier name")
				if err != nil {
					return err
				}
				if *id == "" {
					h, _ := os.Hostname()
					*id = fmt.Sprintf("%s-%d", h, os.Getpid())
				}
				c, err := coord.Dial(*eps)
				if err != nil {
					return err
				}
				defer c.Close()
				start := time.Now()
				if err := coord.Barrier(context.Background(), c, name, *id, *count, *ttl, *timeout); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "barrier %s: %s passed with %d participants after %s\n", name, *id, *count, time.Since(start).Round(time.Millisecond))
				return nil
			}
		},
	},
	{
		name:    "etcd-clean",
		args:    "--prefix P",
		summary: "Delete stale keys under a prefix (discovery entries of killed workers)",
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			eps := endpointsFlag(fs)
			prefix := fs.String("prefix", "", "key prefix to delete (required)")
			return func(e *env, args []string) error {
				c, err := coord.Dial(*eps)
				if err != nil {
					return err
				}
				defer c.Close()
				n, err := coord.Clean(context.Background(), c, *prefix)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "deleted %d keys under %s\n", n, *prefix)
				return nil
			}
		},
	},
	{
		name:    "publish-head",
		args:    "--key K --value V",
		summary: "Publish the head node's address for the other nodes",
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			eps := endpointsFlag(fs)
			key := fs.String("key", "", "key (required)")
			value := fs.String("value", "", "value (required)")
			return func(e *env, args []string) error {
				if *key == "" || *value == "" {
					return usagef("--key and --value are required")
				}
				c, err := coord.Dial(*eps)
				if err != nil {
					return err
				}
				defer c.Close()
				return coord.Publish(context.Background(), c, *key, *value)
			}
		},
	},
	{
		name:    "get-head",
		args:    "--key K [--timeout D]",
		summary: "Print a published value, waiting for it to appear",
		setup: func(fs *pflag.FlagSet) func(*env, []string) error {
			eps := endpointsFlag(fs)
			key := fs.String("key", "", "key (required)")
			timeout := fs.Duration("timeout", time.Minute, "give up after this long")
			return func(e *env, args []string) error {
				if *key == "" {
					return usagef("--key is required")
				}
				c, err := coord.Dial(*eps)
				if err != nil {
					return err
				}
				defer c.Close()
				v, err := coord.Get(context.Background(), c, *key, *timeout)
				if err != nil {
					return err
				}
				fmt.Fprintln(e.stdout, v)
				return nil
			}
		},
	},
}

func endpointsFlag(fs *pflag.FlagSet) *string {
	return fs.String("endpoints", os.Getenv("ETCD_ENDPOINTS"), "etcd endpoints, comma-separated (default $ETCD_ENDPOINTS)")
}

func init() { register(jobCmd) }

var jobCmd = &command{
	name:    "job",
	args:    "etcd-wait|barrier|etcd-clean|publish-head|get-head|scrape|gpu-sample|health|case [flags]",
	summary: "Helpers a running job uses: coordination through etcd, telemetry",
	subs:    append(jobCommands, jobScrapeCmd, jobGPUCmd, jobHealthCmd, jobCaseCmd),
}
