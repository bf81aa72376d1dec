package exactly

import (
	"context"
	"fmt"
	"github.com/redisync/redisync/internal/errs"
	"time"
)

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
