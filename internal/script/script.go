// Package script runs the Lua scripts of package lua through typed
// wrappers that own argument order, units and decoding.
//
// Scripts run with EVALSHA, falling back to EVAL after NOSCRIPT. go-redis
// never resends a script after a network error, except a renewal (queue):
// the hold engine and the receipts decide what a retry means. The scripts
// also run on miniredis, for unit tests.
package script

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ms converts d to whole milliseconds, at least one: a tiny lease must not
// become "no expiry".
func ms(d time.Duration) int64 {
	if n := d.Milliseconds(); n > 0 {
		return n
	}
	return 1
}

// patienceMs encodes a waiter timeout; 0 (never join the line) when not
// positive.
func patienceMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return ms(d)
}

// flag encodes a boolean argument. It returns an interface so that the
// constant is boxed at compile time, not allocated per call.
func flag(b bool) any {
	if b {
		return "1"
	}
	return "0"
}

// pttl decodes a remaining lease: -1 and -2 become 0 (unknown); PTTL 0
// becomes 1ms, a lease about to end.
func pttl(v int64) time.Duration {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return time.Millisecond
	}
	return time.Duration(v) * time.Millisecond
}

// IntCmd is a script reply decoded as one integer.
type IntCmd struct{ cmd *redis.Cmd }

func (c IntCmd) Result() (int64, error) { return c.cmd.Int64() }

// BoolCmd is a script reply decoded as 1 (true) or 0 (false).
type BoolCmd struct{ cmd *redis.Cmd }

func (c BoolCmd) Result() (bool, error) {
	n, err := c.cmd.Int64()
	return n == 1, err
}

// RenewCmd is a renewal's reply: 1 when extended, else the holder instead
// of the owner (Holder), or 0 when nobody holds.
type RenewCmd struct {
	cmd *redis.Cmd
	rw  bool // the holder is a hash field: "w:" or "r:" and the owner id
}

// Result reports whether the lease was extended.
func (c RenewCmd) Result() (bool, error) {
	v, err := c.cmd.Result()
	if err != nil {
		return false, err
	}
	switch v := v.(type) {
	case int64:
		return v == 1, nil
	case string:
		return false, nil
	}
	return false, fmt.Errorf("unexpected renewal reply %v", v)
}

// Holder is whoever a renewal found holding the lock instead of the owner.
type Holder struct {
	Owner string
	Mode  string // a read-write lock's: "write" or "read"; "" for a mutex
}

// Holder returns who holds the lock instead of the owner; the zero Holder
// when the renewal succeeded, failed, or found nobody.
func (c RenewCmd) Holder() Holder {
	s, ok := c.cmd.Val().(string)
	if !ok || c.cmd.Err() != nil {
		return Holder{}
	}
	if !c.rw {
		return Holder{Owner: s}
	}
	switch mode, id, _ := strings.Cut(s, ":"); mode {
	case "w":
		return Holder{Owner: id, Mode: "write"}
	case "r":
		return Holder{Owner: id, Mode: "read"}
	}
	return Holder{}
}

// Outcomes of FairLeave and ReentrantLeave.
const (
	LeftNothing = 0 // owner was not in line
	LeftLine    = 1 // owner left the line
	LeftGranted = 2 // not in line, and the id holds one level: a grant
)

// Unlocked is the outcome of a mutex release script.
type Unlocked struct {
	Holds   int64  // remaining levels, or UnlockNotHeld
	Grantee string // the hold id a grant went to
	Token   uint64 // the grant's fencing token, 0 if none
	Seq     uint64 // the grantee's attempt the grant took the place of
}

// UnlockCmd is a mutex release's reply: {holds}, or {0, grantee, token,
// attempt} for a grant.
type UnlockCmd struct{ cmd *redis.Cmd }

func (c UnlockCmd) Result() (Unlocked, error) {
	if n, ok := c.cmd.Val().(int64); ok && c.cmd.Err() == nil {
		// A release with nobody in line answers a bare integer: a table
		// costs Redis more.
		return Unlocked{Holds: n}, nil
	}
	v, err := c.cmd.Slice()
	if err != nil {
		return Unlocked{}, err
	}
	if len(v) == 0 {
		return Unlocked{}, errShortReply
	}
	holds, ok := v[0].(int64)
	if !ok {
		return Unlocked{}, errShortReply
	}
	u := Unlocked{Holds: holds}
	if len(v) >= 3 {
		u.Grantee, _ = v[1].(string)
		token, _ := v[2].(int64)
		u.Token = uint64(token)
	}
	if len(v) >= 4 {
		seq, _ := v[3].(string)
		u.Seq, _ = strconv.ParseUint(seq, 10, 64)
	}
	return u, nil
}

var errShortReply = errors.New("lua: short script reply")

// ints decodes an array reply of at least n integers.
func ints(cmd *redis.Cmd, n int) ([]int64, error) {
	vals, err := cmd.Int64Slice()
	if err != nil {
		return nil, err
	}
	if len(vals) < n {
		return nil, errShortReply
	}
	return vals, nil
}

// Request is a once-per-request script's receipt key (so that a copy
// reports the first run's outcome), the receipt's lifetime, and the
// deadline in server milliseconds past which a copy changes nothing and
// gets "LATE <server time>" (exactly.RequestWindow).
type Request struct {
	Receipt  string
	TTL      time.Duration
	Deadline int64
}

// Grant is a release's grant message on the grantee's owner channel:
// "h<token>:<hold id>#<attempt>". (Versions before hold ids published "g"
// messages, which only wake a waiter; see docs/operations.md.)
type Grant struct {
	Token uint64 // 0 when none was taken
	ID    string // the hold id granted
	// Seq is the waiter's attempt whose place the grant took: a waiter
	// takes a grant only for its last refused attempt (a message read late
	// names an earlier one).
	Seq uint64
}

// ParseGrant decodes a grant message; false for any other payload.
func ParseGrant(payload string) (Grant, bool) {
	rest, ok := strings.CutPrefix(payload, "h")
	if !ok {
		return Grant{}, false
	}
	token, named, _ := strings.Cut(rest, ":")
	t, err := strconv.ParseUint(token, 10, 64)
	i := strings.LastIndexByte(named, '#')
	if err != nil || i < 0 {
		return Grant{}, false
	}
	seq, err := strconv.ParseUint(named[i+1:], 10, 64)
	if err != nil {
		return Grant{}, false
	}
	return Grant{Token: t, ID: named[:i], Seq: seq}, true
}

// Payload is g's grant message, for a delivery within the process
// (hub.Hub.Deliver).
func (g Grant) Payload() string {
	return "h" + strconv.FormatUint(g.Token, 10) + ":" + g.ID + "#" + strconv.FormatUint(g.Seq, 10)
}
