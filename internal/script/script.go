// Package script runs the Lua scripts of package lua through typed
// wrappers. go-redis never resends a script after a network error, except
// the idempotent ones (queue): the hold engine and the receipts decide
// what a retry means.
package script

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ms converts d to milliseconds, at least one: never "no expiry".
func ms(d time.Duration) int64 {
	if n := d.Milliseconds(); n > 0 {
		return n
	}
	return 1
}

// patienceMs encodes a waiter timeout; 0 never joins the line.
func patienceMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return ms(d)
}

// flag returns an interface so the constant is boxed at compile time.
func flag(b bool) any {
	if b {
		return "1"
	}
	return "0"
}

// pttl decodes a remaining lease: 0 if unknown, PTTL 0 is 1ms.
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

// RenewCmd is a renewal's reply: 1, the holder instead (Holder), or 0.
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

// Holder returns who holds the lock instead of the owner, if anyone.
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

// UnlockCmd is a mutex release's reply: holds, or {0, grantee, token, seq}.
type UnlockCmd struct{ cmd *redis.Cmd }

func (c UnlockCmd) Result() (Unlocked, error) {
	if n, ok := c.cmd.Val().(int64); ok && c.cmd.Err() == nil {
		// Nobody in line: a bare integer, cheaper than a table.
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

// Request is a receipt script's receipt key, its lifetime, and the
// deadline past which a copy changes nothing (package exactly).
type Request struct {
	Receipt  string
	TTL      time.Duration
	Deadline int64
}

// Grant is a grant message, "h<token>:<hold id>#<seq>", on the grantee's
// channel (older versions' "g" messages only wake; docs/operations.md).
type Grant struct {
	Token uint64 // 0 when none was taken
	ID    string // the hold id granted
	// Seq is the attempt whose place it took: only a grant for its last
	// refused attempt is the waiter's (one read late names an earlier one).
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

// Payload is g's grant message, for hub.Hub.Deliver.
func (g Grant) Payload() string {
	return "h" + strconv.FormatUint(g.Token, 10) + ":" + g.ID + "#" + strconv.FormatUint(g.Seq, 10)
}

// Outcomes of the force-unlock scripts.
const (
	ForceMoved   = -1 // the holds were not the ones aimed at: nothing changed
	ForceNone    = 0  // there was no lock
	ForceDeleted = 1  // the lock was deleted
)

// Aim returns the hold fields of a lock hash, which a force-unlock must
// find exactly: ids are never reused, so a late copy spares later holds.
func Aim(fields map[string]string) []any {
	var aim []any
	for f := range fields {
		if f != "mode" && !strings.HasPrefix(f, "@") {
			aim = append(aim, f)
		}
	}
	return aim
}

// OwnerOf returns the owner id of hold id.
func OwnerOf(id string) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[:i]
	}
	return id
}
