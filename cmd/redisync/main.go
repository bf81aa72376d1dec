package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

func main() {
	if reaping() {
		os.Exit(reap(os.Args[1:])) // lock's command runs under it
	}
	os.Exit(runMain(os.Args[1:]))
}

// runMain is the program as a process runs it: an interrupt or SIGTERM
// ends a command's ctx (lock passes them on to its command instead).
func runMain(args []string) int {
	// go-redis logs dial failures and reconnects itself; the commands report
	// every error that matters, once, in their own words.
	redis.SetLogger(silentLogger{})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if s, ok := <-sigs; ok {
			cancel(&interrupted{sig: s.(syscall.Signal)})
		}
	}()
	return run(ctx, args, os.Stdout, os.Stderr)
}

// interrupted is the cause of a command's ctx ended by a signal: the
// command exits with 128 + its number, as a shell reports a process
// killed by it.
type interrupted struct{ sig syscall.Signal }

func (e *interrupted) Error() string { return "interrupted by " + signalName(e.sig) }

// code is the exit code of a command interrupted by e.
func (e *interrupted) code() int { return 128 + int(e.sig) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// silentLogger discards go-redis' internal log lines.
type silentLogger struct{}

func (silentLogger) Printf(context.Context, string, ...any) {}
