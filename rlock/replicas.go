package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redisync/redisync/internal/errs"

	"github.com/redisync/redisync/internal/hold"
	"github.com/redisync/redisync/internal/perclient"
	"github.com/redisync/redisync/internal/script"
)

// ErrNotReplicated is matched by the error of a Lock or TryLock whose
// acquisition was not acknowledged by the replicas WithReplicaAck asks
// for; the acquisition was undone. It is the same value in every redisync
// package.
var ErrNotReplicated = errs.ErrNotReplicated

// WithReplicaAck makes every acquisition wait until at least replicas
// replicas have acknowledged it, for up to timeout: the acquire script and
// a WAIT run on one connection to the primary, so WAIT covers exactly that
// write. If fewer acknowledge in time, the acquisition is undone and Lock
// and TryLock return an error wrapping [ErrNotReplicated] (Lock does not
// retry). It needs a *redis.Client (a Sentinel FailoverClient is one) or a
// *redis.ClusterClient; New panics on another client, and on replicas < 1
// or timeout <= 0. The default is no acknowledgement.
//
// An acknowledged acquisition survives a failover to a replica that
// acknowledged it. What it does not cover: renewals and unlocks are not
// acknowledged, so a replica promoted before the last renewal reached it
// expires the lock up to that much early (replication lag, normally
// milliseconds); Redis may promote a replica that did not acknowledge
// when replicas is less than their number; and an unlock lost in a
// failover leaves the lock held until its lease runs out.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	if replicas < 1 || timeout <= 0 {
		panic(fmt.Sprintf("rlock: WithReplicaAck(%d, %v): want at least one replica and a positive timeout", replicas, timeout))
	}
	return func(c *config) { c.ackReplicas, c.ackTimeout = replicas, timeout }
}

// acquireAcked runs the acquire script and, when it took the lock, WAIT
// on the same connection. It undoes an acquisition that was not
// acknowledged in time.
func (d *described) acquireAcked(ctx context.Context, t *hold.Tracker, patience time.Duration, a hold.Asking) (script.Acquired, error) {
	conn, err := perclient.PrimaryConn(ctx, d.RDB, d.keys.Lock)
	if err != nil {
		return script.Acquired{}, err
	}
	defer conn.Close()
	res, err := script.ReentrantTake(ctx, conn, d.keys, script.TakeArgs{
		ID: a.ID, Lease: d.cfg.Lease(), Fencing: d.cfg.fencing, Patience: patience,
		Deadline: a.Deadline, Placed: a.Placed, Watched: a.Watched, Seq: a.Seq,
	}).Result()
	if err != nil || !res.OK {
		return res, err
	}
	acked, err := conn.Wait(ctx, d.cfg.ackReplicas, d.cfg.ackTimeout).Result()
	if err == nil && acked < int64(d.cfg.ackReplicas) {
		err = fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, acked, d.cfg.ackReplicas, d.cfg.ackTimeout)
	}
	if err != nil {
		t.Undo(ctx, hold.Exclusive, a.ID)
		return script.Acquired{}, err
	}
	return res, nil
}
