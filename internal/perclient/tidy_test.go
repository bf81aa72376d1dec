package perclient_test

import (
	"context"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/redistest"
	"testing"
	"time"
)

type tidyKey struct{}

// A clean-up whose caller's ctx has ended runs in the background, on the
// ctx's values, bounded by its limit; the caller does not wait for it,
// and AwaitTidied does.
func TestTidyUpAfterCtxEnded(t *testing.T) {
	_, rdb := redistest.Mini(t)
	ctx, cancel := context.WithCancel(context.WithValue(t.Context(), tidyKey{}, "v"))
	cancel()
	release := make(chan struct{})
	got := make(chan string, 1)
	start := time.Now()
	done := perclient.TidyUp(ctx, rdb, time.Minute, func(ctx context.Context) {
		<-release
		v, _ := ctx.Value(tidyKey{}).(string)
		if ctx.Err() != nil {
			v = "done: " + ctx.Err().Error()
		}
		got <- v
	})
	if done || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("TidyUp with an ended ctx = %v after %v, want false at once", done, time.Since(start))
	}
	short, stop := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer stop()
	if perclient.AwaitTidied(short) {
		t.Fatal("AwaitTidied returned true while the clean-up ran")
	}
	close(release)
	if !perclient.AwaitTidied(t.Context()) {
		t.Fatal("AwaitTidied returned false")
	}
	if v := <-got; v != "v" {
		t.Fatalf("the clean-up saw %q, want the caller's value and no cancellation", v)
	}

	// With ctx live, the caller waits; the job's ctx ends at its limit.
	done = perclient.TidyUp(t.Context(), rdb, 10*time.Millisecond, func(ctx context.Context) {
		<-ctx.Done()
	})
	if !done {
		t.Fatal("TidyUp with a live ctx did not wait for the clean-up")
	}
}
