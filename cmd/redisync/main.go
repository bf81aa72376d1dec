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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, os.Stdout, os.Stderr)
}

// silentLogger discards go-redis' internal log lines.
type silentLogger struct{}

func (silentLogger) Printf(context.Context, string, ...any) {}
