package main

import (
	"strings"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
)

// decodeFairlock recognises a lock with waiters in line: the lock hash
// (owner id -> hold count, absent while the lock passes to the head
// waiter) and the waiter list redisync:{name}:queue in arrival order. A
// fairlock keeps its waiters' deadlines in the zset
// redisync:{name}:timeouts (Unix ms, server clock); an rlock has no such
// zset. The waiters of both keep a place of their own,
// redisync:{name}:place:<owner id>, which expires when they stop
// refreshing it: an rlock waiter's deadline.
func decodeFairlock(r *report, keys map[string]*key, n keyspace.Names, now time.Time) bool {
	lock, queue, timeouts := keys[n.Lock()], keys[n.Queue()], keys[n.Timeouts()]
	if lock != nil && lock.Type != "hash" {
		return false // a leased semaphore may keep a timeouts zset too
	}
	deadlines := map[string]int64{}
	places := map[string]*key{}
	for k, v := range keys {
		if id, ok := strings.CutPrefix(k, n.Place("")); ok && v.Type == "string" {
			if v.TTLms >= 0 {
				deadlines[id] = now.UnixMilli() + v.TTLms
			}
			places[id] = v
		}
	}
	fair := timeouts != nil && timeouts.Type == "zset"
	if (queue == nil || queue.Type != "list") && !fair && len(places) == 0 {
		return false
	}
	for _, v := range places {
		v.explained = true
	}
	r.Kind, r.note = kindFairlock, "a fairlock with waiters queued"
	if !fair {
		r.Kind, r.note = kindMutex, "an rlock with waiters in line"
	}
	if lock != nil {
		h, _ := lock.Value.(map[string]string)
		r.Holders = holdersOf(h)
		r.TTLms = &lock.TTLms
		lock.explained = true
	} else {
		r.note = "free, about to pass to the head of the queue"
	}
	if fair {
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
			q := queued{ID: id, process: processOf(id), DeadlineMs: deadlines[id], Lapsed: places[id] == nil}
			if q.DeadlineMs > 0 {
				q.RemainingMs = q.DeadlineMs - now.UnixMilli()
			}
			r.Queue = append(r.Queue, q)
		}
		queue.explained = true
	}
	return true
}
