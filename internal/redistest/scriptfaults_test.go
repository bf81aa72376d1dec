package redistest_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

var incr = redis.NewScript(`return redis.call('INCR', KEYS[1])`)

func TestScriptFaultsLoseReplies(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       func(cancel context.CancelFunc) []redistest.LossOption
		want       error
		cancelled  bool // the caller's ctx ended
		waitsForIt bool // the loss is reported only when ctx ends
	}{
		{"default", func(context.CancelFunc) []redistest.LossOption { return nil }, io.ErrUnexpectedEOF, false, false},
		{"as", func(context.CancelFunc) []redistest.LossOption {
			return []redistest.LossOption{redistest.LoseAs(context.Canceled)}
		}, context.Canceled, false, false},
		{"cancelling", func(cancel context.CancelFunc) []redistest.LossOption {
			return []redistest.LossOption{redistest.LoseAs(context.Canceled), redistest.LoseCancelling(cancel)}
		}, context.Canceled, true, false},
		{"until done", func(context.CancelFunc) []redistest.LossOption {
			return []redistest.LossOption{redistest.LoseUntilDone()}
		}, context.DeadlineExceeded, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mr, rdb := redistest.Mini(t)
			faults := redistest.AddScriptFaults(rdb)
			wait := time.Minute
			if tc.waitsForIt {
				wait = 50 * time.Millisecond
			}
			start := time.Now() // before ctx: its deadline counts from here at the latest
			ctx, cancel := context.WithTimeout(t.Context(), wait)
			defer cancel()
			// The EVALSHA refused with NOSCRIPT ran nothing and does not
			// count; the EVAL that follows runs and loses its reply.
			faults.LoseReplies(1, tc.opts(cancel)...)
			if err := incr.Run(ctx, rdb, []string{"n"}).Err(); !errors.Is(err, tc.want) {
				t.Fatalf("script with its reply lost = %v, want %v", err, tc.want)
			}
			if took := time.Since(start); tc.waitsForIt && took < wait {
				t.Fatalf("loss reported after %v, before ctx ended (%v)", took, wait)
			}
			if v, _ := mr.Get("n"); v != "1" {
				t.Fatalf("n = %q, want 1: the script runs even though its reply is lost", v)
			}
			if (ctx.Err() != nil) != tc.cancelled {
				t.Fatalf("ctx.Err() = %v, want ended = %v", ctx.Err(), tc.cancelled)
			}
			if n := faults.Pending(); n != 0 {
				t.Fatalf("Pending = %d after the loss, want 0", n)
			}
			if n, err := incr.Run(t.Context(), rdb, []string{"n"}).Int(); n != 2 || err != nil {
				t.Fatalf("next script = %d, %v; want its reply", n, err)
			}
		})
	}
}

func TestScriptFaultsSkipFailedScripts(t *testing.T) {
	_, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	if err := incr.Load(t.Context(), rdb).Err(); err != nil {
		t.Fatal(err)
	}
	faults.LoseReplies(1)
	if err := redis.NewScript(`return redis.error_reply('no')`).Eval(t.Context(), rdb, nil).Err(); err == nil || errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("failing script = %v, want its own error", err)
	}
	if err := rdb.Incr(t.Context(), "n").Err(); err != nil {
		t.Fatalf("INCR, not a script = %v", err)
	}
	if n := faults.Pending(); n != 1 {
		t.Fatalf("Pending = %d after a failed script and a plain command, want 1", n)
	}
	if err := incr.Run(t.Context(), rdb, []string{"n"}).Err(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("EVALSHA with its reply lost = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestScriptFaultsRefuse(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	faults := redistest.AddScriptFaults(rdb)
	faults.Refuse(true)
	if err := incr.Run(t.Context(), rdb, []string{"n"}).Err(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("refused script = %v, want io.ErrUnexpectedEOF", err)
	}
	if mr.Exists("n") {
		t.Fatal("a refused script ran")
	}
	faults.Refuse(false)
	if n, err := incr.Run(t.Context(), rdb, []string{"n"}).Int(); n != 1 || err != nil {
		t.Fatalf("script after Refuse(false) = %d, %v", n, err)
	}
}
