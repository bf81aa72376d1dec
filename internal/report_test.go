package internal

import (
	"context"
	"errors"
	"fmt"
	"testing"

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
