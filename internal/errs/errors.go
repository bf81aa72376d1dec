package errs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/script"
)

// Sentinel errors shared by every primitive; the public packages alias
// them, so errors.Is works across packages.
var (
	// ErrNotHeld reports an unlock, renewal or release by a handle that
	// does not hold the lock or permit.
	ErrNotHeld = errors.New("lock not held")
	// ErrLost reports a hold that ended without its release.
	ErrLost = errors.New("lock lost")
	// ErrWrongType reports a name used by another kind of key.
	ErrWrongType = errors.New("name holds a value of another kind")
	// ErrUpgradeNotSupported reports a read holder asking for the write lock.
	ErrUpgradeNotSupported = errors.New("upgrade from read to write lock not supported")
	// ErrOutOfRange reports a count or sum beyond MaxCount; nothing changed.
	ErrOutOfRange = errors.New("number out of range")
	// ErrOldServer reports a server older than script.MinVersion.
	ErrOldServer = script.ErrOldServer
)

// MaxCount is the largest count a script holds exactly, 2^53 - 1: Lua
// numbers are doubles.
const MaxCount = 1<<53 - 1

// CheckCount returns an ErrOutOfRange error when v, the count or amount
// called what, is beyond MaxCount in magnitude.
func CheckCount(what string, v int64) error {
	if v > MaxCount || v < -MaxCount {
		return fmt.Errorf("%w: %s %d is beyond 2^53 - 1, the most a script holds exactly", ErrOutOfRange, what, v)
	}
	return nil
}

// outOfRangeReply is a script's refusal of a sum past MaxCount.
const outOfRangeReply = "OUTOFRANGE"

// outOfRangeOf turns an OUTOFRANGE reply into a replyErr.
func outOfRangeOf(err error) error {
	if isReply(err, outOfRangeReply) && !errors.Is(err, ErrOutOfRange) {
		return replyErr{is: ErrOutOfRange, code: outOfRangeReply, reply: err}
	}
	return err
}

// ErrStaleReply reports an acquisition given back because its reply came
// too late; it is transient.
var ErrStaleReply = errors.New("the reply came too late to trust, and the acquisition was given back")

// Wrap wraps err as in `rlock: unlock "orders": lock not held`. A
// WRONGTYPE reply also matches ErrWrongType; redis.Nil never escapes.
func Wrap(pkg, op, name string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, redis.Nil) {
		err = errors.New("unexpected nil reply from redis")
	}
	err = outOfRangeOf(WrongTypeAt(keyspace.NewNames(name).Lock(), err))
	return fmt.Errorf("%s: %s %q: %w", pkg, op, name, err)
}

// WrongTypeAt is Wrap's WRONGTYPE error naming key, for data not under
// the name's main key (a latch).
func WrongTypeAt(key string, err error) error {
	if IsWrongType(err) && !errors.Is(err, ErrWrongType) {
		return wrongType(key, err)
	}
	return err
}

// NewWrongType is WrongTypeAt's error for a wrong kind found by reading
// key, not by a WRONGTYPE reply.
func NewWrongType(key, found string) error {
	return wrongType(key, errors.New("WRONGTYPE "+found))
}

func wrongType(key string, reply error) error {
	return replyErr{is: ErrWrongType, code: "WRONGTYPE", where: fmt.Sprintf("key %q: ", key), reply: reply}
}

// replyErr is an error reply of code without the script id and line Redis
// appends in a script; it matches is and the reply.
type replyErr struct {
	is          error
	code, where string
	reply       error
}

func (e replyErr) Error() string {
	msg := e.reply.Error()
	if i := strings.Index(msg, e.code); i >= 0 {
		msg = msg[i+len(e.code):]
	}
	if i := strings.Index(msg, " script:"); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, " stack traceback:"); i >= 0 {
		msg = msg[:i] // miniredis' form
	}
	return fmt.Sprintf("%v: %s%s", e.is, e.where, strings.TrimSpace(msg))
}

func (e replyErr) Unwrap() []error { return []error{e.is, e.reply} }

// IsWrongType reports whether err is a WRONGTYPE reply, also inside a
// script error (miniredis); a lock named "WRONGTYPE" is not one.
func IsWrongType(err error) bool { return isReply(err, "WRONGTYPE") }

func isReply(err error, code string) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.Contains(reply.Error(), code)
}

// IsNil reports whether err is redis.Nil.
func IsNil(err error) bool { return errors.Is(err, redis.Nil) }

// ErrNotReplicated reports an acquisition undone because too few replicas
// acknowledged it in time.
var ErrNotReplicated = errors.New("acquisition not acknowledged by enough replicas")
