package script

import (
	"context"
)

var (
	latchTrySetCount = load("latch_trysetcount.lua")
	latchCountDown   = load("latch_countdown.lua")
	latchDelete      = load("latch_delete.lua")
)

// LatchKeys names the keys of one count-down latch.
type LatchKeys struct {
	Count   string // missing at zero
	Channel string
}

// LatchTrySetCount runs latch_trysetcount.lua; false if it had a count.
func LatchTrySetCount(ctx context.Context, c Processor, k LatchKeys, r Request, n int64) BoolCmd {
	return BoolCmd{latchTrySetCount.run(ctx, c, []string{k.Count, r.Receipt}, n, ms(r.TTL), r.Deadline)}
}

// LatchCountDown runs latch_countdown.lua; the reply is the count left.
func LatchCountDown(ctx context.Context, c Processor, k LatchKeys, r Request, sharded bool) IntCmd {
	return IntCmd{latchCountDown.run(ctx, c, []string{k.Count, k.Channel, r.Receipt}, flag(sharded), ms(r.TTL), r.Deadline)}
}

// LatchDelete runs latch_delete.lua; false when the latch was at zero.
func LatchDelete(ctx context.Context, c Processor, k LatchKeys, r Request, sharded bool) BoolCmd {
	return BoolCmd{latchDelete.run(ctx, c, []string{k.Count, k.Channel, r.Receipt}, flag(sharded), ms(r.TTL), r.Deadline)}
}
