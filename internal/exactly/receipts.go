package exactly

import (
	"context"
	"fmt"
	"github.com/redisync/redisync/internal/errs"
	"time"
)

// ReceiptTTL is how long a receipt of Once lives past its deadline.
const ReceiptTTL = 10 * time.Second

// AcquireReceiptTTL is the lifetime of a semaphore acquire's receipt. The
// acquire is retried while its caller waits, and a receipt expired before
// the last retry would take the permits twice, so the semaphore deletes it
// once the outcome is known; this is only a safety net, and bounds how
// long Redis may be out of reach during one Acquire.
const AcquireReceiptTTL = time.Hour

// onceRetries is how often Once resends a request whose reply was lost.
const onceRetries = 2

// onceRestarts is how often Once starts a request anew, with a new receipt
// and deadline, after it was refused as late before it ran at all.
const onceRestarts = 2

// Once runs request under a receipt key made by receipt and a deadline:
// a lost reply is resent under the same ones, and the resend reports what
// the first run did. A refusal as late is certain to have changed nothing
// when no copy went before it, or while a receipt written in time would
// still live; then Once learns the server's clock and starts anew. Once
// returns the last error, made to match ctx.Err() when ctx is done.
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
