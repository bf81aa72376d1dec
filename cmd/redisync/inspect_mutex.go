package main

import (
	"time"

	"github.com/redisync/redisync/internal/keyspace"
)

// decodeMutex recognises a reentrant mutex (rlock): one hash, hold id ->
// hold count, with a PEXPIRE lease. A fair lock with nobody queued has the
// same layout.
func decodeMutex(r *report, keys map[string]*key, n keyspace.Names, _ time.Time) bool {
	k := keys[n.Lock()]
	if k == nil || k.Type != "hash" {
		return false
	}
	h, _ := k.Value.(map[string]string)
	r.Kind, r.note = kindMutex, "an rlock, or a fairlock with nobody queued"
	r.Holders = holdersOf(h)
	r.TTLms = &k.TTLms
	k.explained = true
	return true
}
