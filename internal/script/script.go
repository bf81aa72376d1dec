// Package script runs the Lua scripts of package lua: one typed wrapper per
// script, which owns argument order, units and decoding, so callers pass Go
// values (time.Duration, bool) and get Go values back.
//
// Scripts run with EVALSHA and fall back to EVAL when the server does not
// know them (after a restart or SCRIPT FLUSH). go-redis never resends a
// script after a network error, except a renewal (see run and queue): the
// hold engine and the receipts decide what a retry means.
//
// The scripts run unchanged on miniredis, so code built on them can be unit
// tested without a server.
package script

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ms converts a duration to whole milliseconds for a script, never less than
// one so that a tiny lease cannot turn into "no expiry".
func ms(d time.Duration) int64 {
	if n := d.Milliseconds(); n > 0 {
		return n
	}
	return 1
}

// patienceMs encodes a waiter timeout for the acquire scripts: in
// milliseconds, or 0 (never join the line) when it is not positive.
func patienceMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return ms(d)
}

// flag encodes a boolean script argument. Its result is an interface so
// that the constant is boxed at compile time: a string converted to one
// in the call's arguments is an allocation.
func flag(b bool) any {
	if b {
		return "1"
	}
	return "0"
}

// pttl decodes a remaining lease from a script: -1 (no expiry) and -2 (no
// key) become 0, meaning unknown. A lease in its last millisecond (PTTL 0)
// becomes 1ms: it is about to end, not unknown.
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

// Result returns the integer reply.
func (c IntCmd) Result() (int64, error) { return c.cmd.Int64() }

// BoolCmd is a script reply decoded as 1 (true) or 0 (false).
type BoolCmd struct{ cmd *redis.Cmd }

// Result returns the reply as a boolean.
func (c BoolCmd) Result() (bool, error) {
	n, err := c.cmd.Int64()
	return n == 1, err
}

// RenewCmd is a renewal's reply: 1 when the lease was extended; else
// whoever holds the lock instead of the owner (see Holder), or 0 when
// nobody does.
type RenewCmd struct {
	cmd *redis.Cmd
	rw  bool // a read-write lock's: the holder is a hash field, "w:" or "r:" and the owner id
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

// Val reports whether the lease was extended: Result without the error.
func (c RenewCmd) Val() bool {
	ok, _ := c.Result()
	return ok
}

// Holder is whoever a renewal found holding the lock instead of the owner.
type Holder struct {
	Owner string // the holder's owner id
	Mode  string // a read-write lock's: "write" or "read"; "" for a mutex
}

// Holder returns whoever holds the lock instead of the owner, once the
// renewal has run and found the owner's hold gone: the zero Holder when
// it renewed, failed, or found nobody holding.
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

// Outcomes of the leave scripts (FairLeave, ReentrantLeave).
const (
	LeftNothing = 0 // owner was not in line
	LeftLine    = 1 // owner left the line
	LeftGranted = 2 // owner was not in line and holds one level: a grant, if the caller holds none
)

// Unlocked is the outcome of a mutex release script.
type Unlocked struct {
	Holds   int64  // the hold's remaining levels or UnlockNotHeld
	Grantee string // when the release granted the lock: the hold id it went to
	Token   uint64 // the grant's fencing token (0 when none was taken)
	Seq     uint64 // the grantee's attempt whose place the grant took (see Grant)
}

// UnlockCmd is the reply of a mutex release script: {holds}, or {0,
// grantee, token, attempt} for a release that granted the lock.
type UnlockCmd struct{ cmd *redis.Cmd }

// Result decodes the reply.
func (c UnlockCmd) Result() (Unlocked, error) {
	if n, ok := c.cmd.Val().(int64); ok && c.cmd.Err() == nil {
		// The common release, with nobody in line, answers a bare
		// integer: a table costs Redis more to make and to send.
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

// errShortReply reports a script reply with fewer values than its contract.
var errShortReply = errors.New("lua: short script reply")

// ints decodes an array reply of integers.
func ints(cmd *redis.Cmd) ([]int64, error) {
	vals, err := cmd.Int64Slice()
	if err != nil {
		return nil, err
	}
	if len(vals) == 0 {
		return nil, errShortReply
	}
	return vals, nil
}

// Request is what a script that changes a count once per request is told
// of the request: the receipt key its first run writes (so that a copy of
// the request reports that run's outcome), the receipt's lifetime, and the
// request's deadline on the server's clock in milliseconds, past which a
// copy changes nothing and is answered with an error "LATE <server time>"
// (see exactly.RequestWindow).
type Request struct {
	Receipt  string
	TTL      time.Duration
	Deadline int64
}

// Grant is what a release script's grant message carries, published on
// the grantee's owner channel as "h", a fencing token, ":", the hold id
// the grant makes the holder, "#" and the number of the waiter's attempt
// whose place it took. (Releases of the versions before hold ids
// published "g" messages, which name no hold id: one that reaches a
// waiter of this version only wakes it; see docs/operations.md.)
type Grant struct {
	// Token is the hold's fencing token; 0 when none was taken.
	Token uint64
	// ID is the hold id granted: the id of the wait whose place the
	// release took.
	ID string
	// Seq is the number of the waiter's attempt that left that place: a
	// waiter takes a grant's message only for its last refused attempt
	// (a message read late, after a later attempt was refused, names an
	// earlier one).
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

// Payload is g as its grant message says it, for a delivery within the
// process (hub.Hub.Deliver).
func (g Grant) Payload() string {
	return "h" + strconv.FormatUint(g.Token, 10) + ":" + g.ID + "#" + strconv.FormatUint(g.Seq, 10)
}
