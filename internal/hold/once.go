package hold

import (
	"context"
	"time"

	"github.com/redisync/redisync/internal"
)

// onceRetries is how many times Once resends a request whose reply was
// lost.
const onceRetries = 2

// Once runs request, which applies at most once however often it runs
// (it carries a receipt, see internal.Receipt), and resends it while its
// reply is lost. go-redis does not resend redisync's scripts, so these are
// the only resends; none starts after half the receipt's lifetime, so
// every one lands while the receipt lives.
func Once(ctx context.Context, request func() error) error {
	start := time.Now()
	for try := 0; ; try++ {
		err := request()
		if !internal.OutcomeUnknown(err) || internal.CtxDone(ctx) != nil || try == onceRetries || time.Since(start) > internal.ReceiptTTL/2 {
			return internal.CtxErr(ctx, err)
		}
	}
}
