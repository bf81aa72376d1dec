package script

import (
	"context"
)

var (
	latchTrySetCount = load("latch_trysetcount.lua")
	latchCountDown   = load("latch_countdown.lua")
	latchDelete      = load("latch_delete.lua")
)

// LatchKeys names the keys and channel of one count-down latch.
type LatchKeys struct {
	Count   string // the count; missing at zero
	Channel string // announces the step to zero
}

// LatchTrySetCount runs latch_trysetcount.lua: set the count to n (> 0)
// if the latch is at zero, once for the request whose receipt key, which
// lives for ttl, is receipt. The reply is false when the latch had a count
// (nothing changed); a repeated request reports true and changes nothing.
// go-redis never resends it: the caller retries a lost reply while the
// receipt lives (exactly.Once).
func LatchTrySetCount(ctx context.Context, c Processor, k LatchKeys, r Request, n int64) BoolCmd {
	return BoolCmd{latchTrySetCount.run(ctx, c, []string{k.Count, r.Receipt}, n, ms(r.TTL), r.Deadline)}
}

// LatchCountDown runs latch_countdown.lua: take one from the count, once
// for the request whose receipt key, which lives for ttl, is receipt;
// the step to zero deletes the count and wakes every waiter. The reply is
// the count left (0 also when the latch was at zero, which changes
// nothing); a repeated request reports what the first left. go-redis
// never resends it, as LatchTrySetCount.
func LatchCountDown(ctx context.Context, c Processor, k LatchKeys, r Request, sharded bool) IntCmd {
	return IntCmd{latchCountDown.run(ctx, c, []string{k.Count, k.Channel, r.Receipt}, flag(sharded), ms(r.TTL), r.Deadline)}
}

// LatchDelete runs latch_delete.lua: delete the count, whatever it is,
// and wake every waiter, once for the request whose receipt key, which
// lives for ttl, is receipt. The reply is false when the latch was at
// zero (nothing changed); a repeated request reports what the first did.
// go-redis never resends it, as LatchTrySetCount.
func LatchDelete(ctx context.Context, c Processor, k LatchKeys, r Request, sharded bool) BoolCmd {
	return BoolCmd{latchDelete.run(ctx, c, []string{k.Count, k.Channel, r.Receipt}, flag(sharded), ms(r.TTL), r.Deadline)}
}
