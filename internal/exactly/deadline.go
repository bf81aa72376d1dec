package exactly

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Requests that count carry a deadline.
//
// A command can reach Redis long after its client gave up on it: sent
// before a stall, run after it, while TCP kept retransmitting it. A
// receipt makes a copy that runs while the receipt lives report the first
// run's outcome instead of acting again, but a copy can outlive any
// receipt. So every request that adds, subtracts or decides once under a
// receipt also carries a deadline on the server's clock: a script that
// runs after it changes nothing, and one that writes the receipt makes it
// live past the deadline by the receipt's lifetime. Every copy of a
// request carries the same deadline, so each copy either runs before it,
// and finds the receipt of any earlier run, or after it, and does
// nothing: a copy is harmless however late it comes. This holds as long
// as the server's clock is not set back (the same condition as its key
// expiry).
//
// The client estimates the server's clock from its own and the offset a
// refused copy taught it (ServerClock). An estimate that is far off costs
// one refused round trip, never safety.

// RequestWindow is how long after it is sent a request may still run: its
// deadline is the server's estimated time plus RequestWindow. Once sends
// no copy after it.
const RequestWindow = ReceiptTTL / 2

// ServerClock estimates the clock of the Redis server a handle's keys live
// on (on a cluster, each primary has its own clock, and every key of one
// name is on one primary). Its zero value, and nil, take the local clock
// for it.
type ServerClock struct {
	offset atomic.Int64 // server time minus local time, in milliseconds, as last learned
}

// Deadline returns the deadline, in milliseconds of the server's clock, of
// a request sent now that may run within window.
func (c *ServerClock) Deadline(window time.Duration) int64 {
	var offset int64
	if c != nil {
		offset = c.offset.Load()
	}
	return time.Now().UnixMilli() + offset + window.Milliseconds()
}

// Learn records the server's time, in milliseconds, that a refused copy
// reported.
func (c *ServerClock) Learn(serverMs int64) {
	if c != nil {
		c.offset.Store(serverMs - time.Now().UnixMilli())
	}
}

// lateReply starts the error reply of a script that refused a copy of a
// request because its deadline had passed: "LATE <server time in ms>".
const lateReply = "LATE "

// Late reports whether err is a script's refusal of a request whose
// deadline had passed (or lay too far ahead of the server's clock), which
// changed nothing, and returns the server's time it reported.
func Late(err error) (serverMs int64, ok bool) {
	if err == nil {
		return 0, false // the common case, without errors.As's allocation
	}
	var reply redis.Error
	if !errors.As(err, &reply) || !strings.HasPrefix(reply.Error(), lateReply) {
		return 0, false
	}
	ms, perr := strconv.ParseInt(strings.TrimPrefix(reply.Error(), lateReply), 10, 64)
	return ms, perr == nil
}

// ErrLate reports a request that Redis refused because its deadline had
// passed: it changed nothing.
var ErrLate = errors.New("the request reached Redis after its deadline and changed nothing")

// InTime runs a script with a deadline on clock's estimate of the server's
// time (see RequestWindow). When Redis refused it as late, which changed
// nothing, InTime learns the server's clock from the refusal and runs it
// once more, with a deadline on that clock.
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
