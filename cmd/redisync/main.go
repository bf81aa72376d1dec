// Command redisync shows what redisync's distributed synchronizers are for,
// and helps operate them.
//
//	redisync demo                  the story, on an embedded Redis: no setup
//	redisync inspect NAME...       what a lock or semaphore looks like in Redis
//	redisync unlock --force NAME   delete a stuck lock and wake its waiters
//	redisync bench                 a contention benchmark of the primitives
//
// Every subcommand takes --redis URL or --cluster host:port,... to talk to a
// real deployment; demo and bench default to an embedded miniredis.
// Run "redisync help" or "redisync COMMAND --help" for the flags.
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
