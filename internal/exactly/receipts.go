package exactly

import (
	"context"
	"fmt"
	"github.com/redisync/redisync/internal/errs"
	"time"
)

// ReceiptTTL is how long the receipt of a request run by Once lives past
// the request's deadline (see RequestWindow), after which no copy of the
// request changes anything. Receipts expire by themselves.
const ReceiptTTL = 10 * time.Second

// AcquireReceiptTTL is how long the receipt of a counting semaphore's
// acquire request lives. Such a request is retried for as long as its
// caller waits, and a receipt that expired before its last retry would let
// the request take its permits twice; so the receipt is not trusted to a
// short lifetime: it is kept until its request's outcome is known, then
// deleted (see package semaphore). This lifetime is only a safety net
// against receipts whose handle went away first, or that a copy of the
// request still on its way (in a TCP retransmission) could find, and it
// bounds how long Redis may be out of reach during one Acquire.
const AcquireReceiptTTL = time.Hour

// onceRetries is how many times Once resends a request whose reply was
// lost.
const onceRetries = 2

// onceRestarts is how many times Once starts a request anew, under a new
// receipt and deadline, after Redis refused it as late before it ran at
// all (a clock estimate that was off; see ServerClock).
const onceRestarts = 2

// Once runs request, a script that changes something at most once per
// receipt, under a receipt key made by receipt (see Names.Receipt), with a
// deadline on the server's clock (see RequestWindow). The script writes
// the receipt to live ReceiptTTL past the deadline: a request whose reply
// was lost is resent under the same receipt and deadline, and a resent
// request that finds the first went through changes nothing and reports
// what the first did; a copy that runs after the deadline changes nothing
// at all.
//
// The scripts run without go-redis resends (see package script), so the
// resends are only these, and none is sent after the deadline. A copy
// refused as late is known to have changed nothing, and so is every other
// copy of its request when none was sent before it, or when the refusal
// came while a receipt written in time would still live; then Once learns
// the server's clock from the refusal and starts the request anew.
// Once returns the last error, made to match ctx.Err() when ctx is done.
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
