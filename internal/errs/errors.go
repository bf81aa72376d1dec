package errs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/script"
)

// Sentinel errors shared by every primitive. The public packages alias them,
// so rlock.ErrNotHeld == rwlock.ErrNotHeld and errors.Is works across them.
var (
	// ErrNotHeld reports an unlock, renewal or release by a handle that does
	// not hold the lock or permit (never held, already released, expired or
	// taken over by someone else).
	ErrNotHeld = errors.New("lock not held")

	// ErrLost reports that a hold ended without the holder releasing it: its
	// lease ran out, someone force-unlocked it, or renewals kept failing.
	ErrLost = errors.New("lock lost")

	// ErrWrongType reports that the name is already used in Redis by a key of
	// another type or structure. The existing data is left untouched.
	ErrWrongType = errors.New("name holds a value of another kind")

	// ErrUpgradeNotSupported reports a read holder asking for the write lock.
	ErrUpgradeNotSupported = errors.New("upgrade from read to write lock not supported")

	// ErrOutOfRange reports a count, or an amount added to one, that a
	// Redis script cannot hold exactly: larger than MaxCount in magnitude,
	// or taking a count past it. Nothing is changed in Redis.
	ErrOutOfRange = errors.New("number out of range")

	// ErrOldServer reports a server older than the oldest the scripts run
	// on (script.MinVersion). Nothing is sent to it but the version check.
	ErrOldServer = script.ErrOldServer
)

// MaxCount is the largest count redisync's scripts hold exactly, 2^53 - 1:
// a number in a Redis (Lua) script is a double, exact for integers no
// larger in magnitude. Counts and amounts beyond it are refused with
// ErrOutOfRange, before any I/O when the caller passed them, and by the
// script, changing nothing, when a sum would pass it.
const MaxCount = 1<<53 - 1

// CheckCount returns an error wrapping ErrOutOfRange when v, the count or
// amount called what, is larger than MaxCount in magnitude, and nil
// otherwise.
func CheckCount(what string, v int64) error {
	if v > MaxCount || v < -MaxCount {
		return fmt.Errorf("%w: %s %d is beyond 2^53 - 1, the most a script holds exactly", ErrOutOfRange, what, v)
	}
	return nil
}

// outOfRangeReply starts the error reply of a script that refused a sum
// beyond MaxCount (see lua/semaphore_release.lua).
const outOfRangeReply = "OUTOFRANGE"

// outOfRange is a script's OUTOFRANGE reply as a user reads it: what the
// script says, without its script id; it matches ErrOutOfRange and the
// reply itself.
type outOfRange struct{ reply error }

func (e outOfRange) Error() string {
	return fmt.Sprintf("%v: %s", ErrOutOfRange, replyText(e.reply.Error(), outOfRangeReply))
}

func (e outOfRange) Unwrap() []error { return []error{ErrOutOfRange, e.reply} }

// outOfRangeOf turns a script's OUTOFRANGE reply into an outOfRange; any
// other error is returned as it is.
func outOfRangeOf(err error) error {
	var reply redis.Error
	if errors.As(err, &reply) && strings.Contains(reply.Error(), outOfRangeReply) && !errors.Is(err, ErrOutOfRange) {
		return outOfRange{reply: err}
	}
	return err
}

// ErrStaleReply reports an acquisition whose reply came after the
// validity its lease would give it, and which was therefore given back.
// It is transient: the next attempt may be answered in time.
var ErrStaleReply = errors.New("the reply came too late to trust, and the acquisition was given back")

// Wrap wraps err with the package, the operation and the primitive's name,
// as in `rlock: unlock "orders": lock not held`. A WRONGTYPE reply from Redis
// additionally matches ErrWrongType, and redis.Nil never escapes.
func Wrap(pkg, op, name string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, redis.Nil) {
		// A nil reply where a value was expected is a protocol surprise,
		// not something callers should have to know about.
		err = errors.New("unexpected nil reply from redis")
	}
	err = outOfRangeOf(WrongTypeAt(keyspace.NewNames(name).Lock(), err))
	return fmt.Errorf("%s: %s %q: %w", pkg, op, name, err)
}

// WrongTypeAt turns a WRONGTYPE reply into the error Wrap makes of it,
// naming key: for a primitive whose data is not under the name's main key
// (a latch), so that the error names the key that holds the wrong kind of
// value. Any other error is returned as it is.
func WrongTypeAt(key string, err error) error {
	if IsWrongType(err) && !errors.Is(err, ErrWrongType) {
		return wrongType{key: key, reply: err}
	}
	return err
}

// NewWrongType returns the error of a name whose key holds what another
// kind of primitive keeps there (found by reading it, not by a WRONGTYPE
// reply): it names key and says what was found, as Wrap's does.
func NewWrongType(key, found string) error {
	return wrongType{key: key, reply: errors.New("WRONGTYPE " + found)}
}

// wrongType is a WRONGTYPE reply as a user reads it: it names the key of
// the primitive and says what Redis found, without the script id and line
// Redis appends to an error raised in a script. It matches ErrWrongType
// and, with errors.Is and errors.As, the reply itself.
type wrongType struct {
	key   string
	reply error
}

func (e wrongType) Error() string {
	return fmt.Sprintf("%v: key %q: %s", ErrWrongType, e.key, replyText(e.reply.Error(), "WRONGTYPE"))
}

// replyText is what the error reply msg of code says, without the code
// and the script id and line Redis appends to an error raised in a
// script.
func replyText(msg, code string) string {
	if i := strings.Index(msg, code); i >= 0 {
		msg = msg[i+len(code):]
	}
	if i := strings.Index(msg, " script:"); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, " stack traceback:"); i >= 0 {
		msg = msg[:i] // miniredis' form
	}
	return strings.TrimSpace(msg)
}

func (e wrongType) Unwrap() []error { return []error{ErrWrongType, e.reply} }

// IsWrongType reports whether err is Redis' WRONGTYPE error reply, also
// when it was raised inside a script (where some servers, miniredis among
// them, put it after a script error prefix). Only an error reply counts:
// an error whose wrapping text merely contains the word (a lock named
// "WRONGTYPE") is not one.
func IsWrongType(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.Contains(reply.Error(), "WRONGTYPE")
}

// IsNil reports whether err is a nil reply (redis.Nil).
func IsNil(err error) bool { return errors.Is(err, redis.Nil) }

// ErrNotReplicated reports that an acquisition was not acknowledged by as
// many replicas as asked for within the time allowed; it was undone.
var ErrNotReplicated = errors.New("acquisition not acknowledged by enough replicas")
