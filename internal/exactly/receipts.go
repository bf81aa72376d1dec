package exactly

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/errs"
)

// RequestWindow is how long after it is sent a request may still run.
const RequestWindow = ReceiptTTL / 2

// ServerClock estimates the server's clock; zero or nil is the local one.
type ServerClock struct {
	offset atomic.Int64 // server minus local time, in ms
}

// Deadline returns the server-clock deadline in ms of a request sent now.
func (c *ServerClock) Deadline(window time.Duration) int64 {
	var offset int64
	if c != nil {
		offset = c.offset.Load()
	}
	return time.Now().UnixMilli() + offset + window.Milliseconds()
}

// Learn records the server's time, in ms, a refused copy reported.
func (c *ServerClock) Learn(serverMs int64) {
	if c != nil {
		c.offset.Store(serverMs - time.Now().UnixMilli())
	}
}

// lateReply starts a refusal past the deadline: "LATE <server ms>".
const lateReply = "LATE "

// Late reports whether err refused a request as late (or too far ahead),
// and the server time it reported.
func Late(err error) (serverMs int64, ok bool) {
	if err == nil {
		return 0, false // without errors.As's allocation
	}
	var reply redis.Error
	if !errors.As(err, &reply) || !strings.HasPrefix(reply.Error(), lateReply) {
		return 0, false
	}
	ms, perr := strconv.ParseInt(strings.TrimPrefix(reply.Error(), lateReply), 10, 64)
	return ms, perr == nil
}

// ErrLate reports a request refused past its deadline: it changed nothing.
var ErrLate = errors.New("the request reached Redis after its deadline and changed nothing")

// InTime runs a script with a deadline, once more if refused as late.
func InTime(clock *ServerClock, run func(deadline int64) error) error {
	for try := 0; ; try++ {
		err := run(clock.Deadline(RequestWindow))
		now, late := Late(err)
		if !late || try == 1 {
			return err
		}
		clock.Learn(now)
	}
}

// ReceiptTTL is how long a receipt of Once lives past its deadline.
const ReceiptTTL = 10 * time.Second

// AcquireReceiptTTL is a semaphore acquire's receipt lifetime: a safety
// net, as the semaphore deletes it once the outcome is known, and the
// longest Redis may be out of reach during one Acquire.
const AcquireReceiptTTL = time.Hour

// onceRetries is how often Once resends a request whose reply was lost.
const onceRetries = 2

// onceRestarts is how often Once starts a request anew, with a new receipt
// and deadline, after it was refused as late before it ran at all.
const onceRestarts = 2

// Once runs request under a receipt and deadline, resending a lost reply
// under the same ones. A refusal as late changed nothing if no copy went
// before it or a receipt written in time would still live: then Once
// starts anew on the learned clock. The error matches ctx.Err() if done.
func Once(ctx context.Context, clock *ServerClock, receipt func() string, request func(receipt string, deadline int64) error) error {
	rcpt, start, deadline := receipt(), time.Now(), clock.Deadline(RequestWindow)
	restarts := 0
	for try := 0; ; try++ {
		err := request(rcpt, deadline)
		if now, late := Late(err); late {
			clock.Learn(now)
			sure := try == 0 || now <= deadline+ReceiptTTL.Milliseconds()
			if !sure || restarts == onceRestarts || errs.CtxDone(ctx) != nil {
				return errs.CtxErr(ctx, fmt.Errorf("%w: %w", ErrLate, err))
			}
			restarts++
			rcpt, start, deadline, try = receipt(), time.Now(), clock.Deadline(RequestWindow), -1
			continue
		}
		if !errs.OutcomeUnknown(err) || errs.CtxDone(ctx) != nil || try == onceRetries || time.Since(start) >= RequestWindow {
			return errs.CtxErr(ctx, err)
		}
	}
}
