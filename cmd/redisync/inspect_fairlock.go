package main

import (
	"time"

	"github.com/redisync/redisync/internal"
)

// decodeFairlock recognises a lock with waiters in line, a fairlock or an
// rlock (they share the layout): the lock hash (owner
// id -> hold count, absent while the lock passes to the head waiter), the
// waiter list redisync:{name}:queue in arrival order, and the zset
// redisync:{name}:timeouts of waiter deadlines (Unix ms, server clock).
func decodeFairlock(r *report, keys map[string]*key, n internal.Names, now time.Time) bool {
	lock, queue, timeouts := keys[n.Lock()], keys[n.Queue()], keys[n.Timeouts()]
	if lock != nil && lock.Type != "hash" {
		return false // a leased semaphore may keep a timeouts zset too
	}
	if (queue == nil || queue.Type != "list") && (timeouts == nil || timeouts.Type != "zset") {
		return false
	}
	r.Kind, r.note = kindFairlock, "a fairlock, or an rlock with waiters in line"
	if lock != nil {
		h, _ := lock.Value.(map[string]string)
		r.Holders = holdersOf(h)
		r.TTLms = &lock.TTLms
		lock.explained = true
	} else {
		r.note = "free, about to pass to the head of the queue"
	}
	deadlines := map[string]int64{}
	if timeouts != nil && timeouts.Type == "zset" {
		zs, _ := timeouts.Value.([]map[string]any)
		for _, z := range zs {
			id, _ := z["member"].(string)
			score, _ := z["score"].(float64)
			deadlines[id] = int64(score)
		}
		timeouts.explained = true
	}
	if queue != nil && queue.Type == "list" {
		ids, _ := queue.Value.([]string)
		for _, id := range ids {
			q := queued{ID: id, DeadlineMs: deadlines[id]}
			if q.DeadlineMs > 0 {
				q.RemainingMs = q.DeadlineMs - now.UnixMilli()
			}
			r.Queue = append(r.Queue, q)
		}
		queue.explained = true
	}
	return true
}
