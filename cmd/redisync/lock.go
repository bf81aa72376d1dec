package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// Exit codes of lock, besides the command's own status (128 + N when it
// died of signal N), 1 and 2.
const (
	exitWaitRanOut = 75  // --wait ran out before the lock was held (EX_TEMPFAIL: try again later)
	exitLockLost   = 76  // the lock was lost while the command ran; it was stopped
	exitCannotRun  = 126 // the command was found but could not be started
	exitNotFound   = 127 // the command was not found
)

const lockAbout = `
Runs COMMAND while holding the lock NAME, as flock(1), etcdctl lock and
consul lock do: waits for the lock (as long as it takes, or --wait), runs
the command with the lock's fencing token in its environment
(REDISYNC_TOKEN), releases the lock when the command exits and exits with
its status (128 + N when it died of signal N).

While the command runs, redisync's watchdog renews the lock every third of
--lease. If the lock is lost (it was force-unlocked, or renewals failed
until the lease ran out), the command is sent SIGTERM, and SIGKILL after
--grace, and redisync exits with code 76; a forced unlock is seen within
a second (redisync asks Redis every second). The command runs in a
process group of its own, as with timeout(1): the signals sent to redisync
(INT, TERM, HUP, QUIT, USR1, USR2) are passed on to that group; a command
that reads from the terminal is stopped by it, so run such commands
otherwise. When redisync dies, SIGKILL included, a reaper at the head of
the group kills the whole group at once (Linux; within 0.1s elsewhere),
long before the lock can pass to anyone; what the command leaves running
in its group when it exits is killed before the lock is released.

--permits N runs the command under a leased semaphore of N permits instead
(at most N at once; REDISYNC_PERMIT holds the permit's id and there is no
token): N becomes the semaphore's total only when it has none; an
existing total is left as it is ('redisync semaphore set' changes it). --fair takes a fair lock
(fairlock): commands waiting for NAME run in the order they came.

--wait bounds everything before the command runs, connecting to Redis
included.

Exit codes: the command's status; 75 when --wait ran out before the lock
was held; 76 when the lock was lost while the command ran; 126 when the
command could not be started, 127 when it was not found; 130 (SIGINT) or
143 (SIGTERM) when redisync was interrupted while it waited; 1 when
redisync itself failed (Redis unreachable); 2 for a mistake on the
command line.`

// lockFlags are the flags of lock.
type lockFlags struct {
	wait, grace, lease time.Duration
	permits            int64
	fair               bool
}

func runLock(ctx context.Context, out *output, args []string) error {
	before, command, dashed := cutDashDash(args)
	fs := newFlagSet(out, "lock", "lock [flags] NAME -- COMMAND [ARGS...]", lockAbout)
	conn := addConnFlags(fs, false)
	var f lockFlags
	fs.DurationVar(&f.wait, "wait", 0, "give up (exit code 75) when the lock is not held within `D`; 0 waits as long as it takes")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "after the lock is lost, how long the command has between SIGTERM and SIGKILL")
	fs.DurationVar(&f.lease, "lease", rlock.DefaultWatchdogTimeout, "the lock's `lease`, renewed every third of it: a redisync that dies frees the lock that long after")
	fs.Int64Var(&f.permits, "permits", 0, "hold one of the permits of a leased semaphore instead of a lock, giving it `N` permits if it has none (an existing total is left as it is)")
	fs.BoolVar(&f.fair, "fair", false, "take a fair lock: waiting commands run in the order they came")
	names, err := fs.parse(before)
	if err != nil {
		return err
	}
	switch {
	case !dashed || len(command) == 0:
		return usagef("no COMMAND: put it after --, as in redisync lock NAME -- COMMAND [ARGS...]")
	case len(names) != 1:
		return usagef("lock takes one NAME before --, got %d", len(names))
	case names[0] == "":
		return usagef("empty NAME")
	case f.permits < 0, f.wait < 0, f.grace < 0:
		return usagef("--permits, --wait and --grace cannot be negative")
	case f.lease < 30*time.Millisecond:
		return usagef("--lease %v: the lease must be at least 30ms", f.lease)
	case f.fair && f.permits > 0:
		return usagef("--fair and --permits exclude each other")
	}
	name := names[0]
	// --wait bounds everything before the command runs, the connection
	// check included.
	wctx := ctx
	if f.wait > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, f.wait)
		defer cancel()
	}
	t, err := conn.open(wctx)
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			return &exitStatus{code: exitWaitRanOut, msg: fmt.Sprintf("%v: --wait %v ran out", err, f.wait)}
		}
		return err
	}
	defer t.close()
	h, err := f.take(ctx, wctx, out, t.client(), name)
	if err != nil {
		return err
	}
	code, lost := supervise(out, h, command, f.grace, f.what(name))
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.release(rctx); err != nil && !lost {
		fmt.Fprintf(out.stderr, "redisync lock: releasing %s: %v (it frees itself within --lease)\n", f.what(name), err)
	}
	if lost {
		return &exitStatus{code: exitLockLost, msg: fmt.Sprintf("lost %s while the command ran: it was stopped (its status: %d)", f.what(name), code)}
	}
	return &exitStatus{code: code}
}

// what names the hold, for messages: the lock "name", or a permit of the
// semaphore "name".
func (f lockFlags) what(name string) string {
	if f.permits > 0 {
		return fmt.Sprintf("a permit of semaphore %q", name)
	}
	return fmt.Sprintf("the lock %q", name)
}

// cutDashDash splits args at the first "--": what comes before (flags and
// NAME) and the command after it.
func cutDashDash(args []string) (before, command []string, found bool) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:], true
		}
	}
	return args, nil, false
}

// lockHold is what lock holds while the command runs.
type lockHold struct {
	env     string          // the variable the command gets: REDISYNC_TOKEN or REDISYNC_PERMIT
	done    <-chan struct{} // closed when the hold ends
	release func(ctx context.Context) error
	// held asks Redis whether the hold is still there: a forced unlock is
	// seen by it before the watchdog's next renewal sees it.
	held func(ctx context.Context) (bool, error)
}

// take waits for the lock (or a permit) called name until wctx ends
// (--wait); ctx is the command's.
func (f lockFlags) take(ctx, wctx context.Context, out *output, rdb redis.UniversalClient, name string) (*lockHold, error) {
	var h *lockHold
	var err error
	switch {
	case f.permits > 0:
		h, err = f.takePermit(ctx, wctx, out, rdb, name)
	case f.fair:
		m := fairlock.New(rdb, name, fairlock.WithFencing(), fairlock.WithWatchdogTimeout(f.lease))
		err = m.Lock(wctx)
		h = &lockHold{env: "REDISYNC_TOKEN=" + strconv.FormatUint(m.Token(), 10), done: m.Done(), release: m.Unlock, held: m.IsHeld}
	default:
		m := rlock.New(rdb, name, rlock.WithFencing(), rlock.WithWatchdogTimeout(f.lease))
		err = m.Lock(wctx)
		h = &lockHold{env: "REDISYNC_TOKEN=" + strconv.FormatUint(m.Token(), 10), done: m.Done(), release: m.Unlock, held: m.IsHeld}
	}
	switch {
	case err == nil:
		return h, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("interrupted while waiting for %q", name) // run gives it the signal's code
	case errors.Is(err, context.DeadlineExceeded):
		held := fmt.Sprintf("%q is held elsewhere", name)
		if f.permits > 0 {
			held = fmt.Sprintf("every permit of semaphore %q is held", name)
		}
		return nil, &exitStatus{code: exitWaitRanOut, msg: fmt.Sprintf("%s: --wait %v ran out", held, f.wait)}
	}
	return nil, err
}

// takePermit waits on wctx for a permit of the leased semaphore called
// name, after giving it f.permits permits if it has none: an existing
// total is never changed (redisync semaphore set does that).
func (f lockFlags) takePermit(ctx, wctx context.Context, out *output, rdb redis.UniversalClient, name string) (*lockHold, error) {
	l := semaphore.NewLeased(rdb, name, semaphore.WithWatchdogTimeout(f.lease))
	set, err := l.TrySetPermits(wctx, f.permits)
	if err != nil {
		return nil, err
	}
	if !set {
		total, err := rdb.Get(wctx, keyspace.NewNames(name).Sub("permits")).Int64()
		if err == nil && total != f.permits {
			fmt.Fprintf(out.stderr, "redisync lock: semaphore %q has %s in all, not %d: --permits sets a total only for a name that has none; 'redisync semaphore set --force' changes it\n", name, permits(total), f.permits)
		}
	}
	id, err := l.Acquire(wctx, 0)
	if err != nil {
		return nil, err
	}
	release := func(ctx context.Context) error { return l.Release(ctx, id) }
	held := func(ctx context.Context) (bool, error) {
		// The permit is a member of the sorted set under the name's key.
		err := rdb.ZScore(ctx, keyspace.NewNames(name).Lock(), id).Err()
		if errs.IsNil(err) {
			return false, nil
		}
		return err == nil, err
	}
	return &lockHold{env: "REDISYNC_PERMIT=" + id, done: l.Done(id), release: release, held: held}, nil
}
