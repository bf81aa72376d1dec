package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

func main() {
	// go-redis logs dial failures and reconnects itself; the commands report
	// every error that matters, once, in their own words.
	redis.SetLogger(silentLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// silentLogger discards go-redis' internal log lines.
type silentLogger struct{}

func (silentLogger) Printf(context.Context, string, ...any) {}
