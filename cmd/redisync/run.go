package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime error: unreachable server, Redis error, a failed check
	exitUsage   = 2 // a mistake on the command line
	exitNothing = 3 // inspect, semaphore show: a NAME holds nothing in Redis (a mistyped name, a lock not held)
	// A command a signal ended before it was done exits with 128 + its
	// number: 130 for SIGINT, 143 for SIGTERM (see interrupted).
)

// exitStatus ends a command with an exit code of its own (lock exits with
// its command's status); msg, if any, is reported on stderr first.
type exitStatus struct {
	code int
	msg  string
}

func (e *exitStatus) Error() string { return fmt.Sprintf("exit status %d: %s", e.code, e.msg) }

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, out *output, args []string) error
}

// output is where a command writes: results to stdout, progress and
// diagnostics to stderr.
type output struct {
	stdout, stderr io.Writer
}

// commands returns the subcommands in the order help lists them.
func commands() []command {
	return []command{
		{"demo", "see why a distributed lock matters: overselling, a cache stampede, a batch waited for with a latch, crossed transfers, a leader that dies", runDemo},
		{"inspect", "show who holds a lock or semaphore, or what a latch counts: lease, queue, waiters (read-only)", runInspect},
		{"list", "list every name in use, with its kind, holder and TTL (read-only, SCAN)", runList},
		{"unlock", "free a stuck lock whoever holds it, and wake its waiters (needs --force)", runUnlock},
		{"semaphore", "show a semaphore's permits; set or add them, release a leased permit by id (needs --force)", runSemaphore},
		{"lock", "run a command while holding a lock, and stop it if the lock is lost", runLock},
		{"bench", "measure throughput and handoff latency of the primitives on your Redis", runBench},
	}
}

// run is the whole program: it runs the subcommand named by args[0] and
// returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &output{stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printHelp(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 {
			// "redisync help demo" is "redisync demo --help".
			return run(ctx, []string{rest[0], "--help"}, stdout, stderr)
		}
		printHelp(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			err := c.run(ctx, out, rest)
			var sig *interrupted
			var status *exitStatus
			if err != nil && !errors.As(err, &status) && errors.As(context.Cause(ctx), &sig) {
				// A signal ended the command before it was done (lock's
				// command, if it ran, reports its own status instead).
				fmt.Fprintf(stderr, "redisync %s: %v\n", c.name, sig)
				return sig.code()
			}
			return exitCode(out, c.name, err)
		}
	}
	fmt.Fprintf(stderr, "redisync: unknown command %q\nRun 'redisync help' for the list of commands.\n", name)
	return exitUsage
}

// exitCode reports err on stderr and maps it to an exit code.
func exitCode(out *output, cmd string, err error) int {
	var usage *usageError
	var status *exitStatus
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return exitOK
	case errors.As(err, &status):
		if status.msg != "" {
			fmt.Fprintf(out.stderr, "redisync %s: %s\n", cmd, status.msg)
		}
		return status.code
	case errors.As(err, &usage):
		fmt.Fprintf(out.stderr, "redisync %s: %s\nRun 'redisync %s --help' for usage.\n", cmd, usage.msg, cmd)
		return exitUsage
	default:
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap() // one line per failure
		}
		for _, e := range errs {
			fmt.Fprintf(out.stderr, "redisync %s: %v\n", cmd, e)
		}
		return exitFailure
	}
}

func printHelp(w io.Writer) {
	var b strings.Builder
	b.WriteString("redisync: look at, repair and measure redisync's locks and semaphores in Redis.\n\n")
	b.WriteString("Usage:\n  redisync COMMAND [flags] [args]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\nEvery command takes --redis URL (redis://[user:password@]host:port, or rediss://\n")
	b.WriteString("for TLS) or --cluster host:port,... . inspect, list, unlock, semaphore and lock default to\n")
	b.WriteString("redis://localhost:6379; demo and bench run on an embedded miniredis unless told.\n")
	b.WriteString("NAME is the name the code gave New (\"orders:42\"), not a Redis key.\n\n")
	b.WriteString("Examples:\n")
	b.WriteString("  redisync demo\n")
	b.WriteString("  redisync inspect --redis redis://10.0.0.5:6379 orders:42\n")
	b.WriteString("  redisync list --redis redis://10.0.0.5:6379 'orders:*'\n")
	b.WriteString("  redisync unlock --force --redis redis://10.0.0.5:6379 orders:42\n")
	b.WriteString("  redisync semaphore set --force --redis redis://10.0.0.5:6379 pdf-renders 4\n")
	b.WriteString("  redisync lock --wait 1m --redis redis://10.0.0.5:6379 nightly -- ./report.sh\n")
	b.WriteString("  redisync bench --redis redis://10.0.0.5:6379 --duration 10s\n\n")
	b.WriteString("Run 'redisync COMMAND --help' for its flags.\n")
	fmt.Fprint(w, b.String())
}
