package wait

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/observe"
)

func TestOutcome(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	for _, c := range []struct {
		ctx  context.Context
		ok   bool
		err  error
		want observe.Outcome
	}{
		{live, true, nil, observe.Acquired},
		{live, false, nil, observe.Contended},
		{live, false, fmt.Errorf("wait: %w", context.DeadlineExceeded), observe.Canceled},
		{done, false, errors.New("i/o timeout"), observe.Canceled}, // cut short by ctx
		{live, false, errors.New("READONLY"), observe.Failed},
	} {
		if got := outcome(c.ctx, c.ok, c.err); got != c.want {
			t.Errorf("outcome(ok=%v, err=%v) = %v, want %v", c.ok, c.err, got, c.want)
		}
	}
}

// A nil report, what an acquire on a client without an observer gets,
// accepts every call.
func TestNilReport(t *testing.T) {
	var r *Report
	r.Attempt(context.Background(), false, nil)
	r.Park()
	r.Wake(true)
	r.End(context.Background(), true, nil)
	var h *HoldReport
	h.End()
	h.Lost()
}

// On a client without an observer, the reports of an acquire and a hold
// allocate nothing: the hot path costs what it did before the hook.
func TestUnobservedAllocatesNothing(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	p := NewProbe(rdb, "rlock", "x")
	ctx := context.Background()
	n := testing.AllocsPerRun(100, func() {
		actx, r := p.Begin(ctx, true)
		ReportOf(actx).Attempt(actx, true, nil)
		r.Park()
		r.End(ctx, true, nil)
		h := p.Hold(time.Now())
		h.End()
	})
	if n != 0 {
		t.Errorf("%v allocations per unobserved acquire and hold", n)
	}
}
