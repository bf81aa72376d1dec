package main

import (
	"time"

	"github.com/redisync/redisync/internal"
)

// rwModeField is the field of an rwlock's hash that says how it is held.
const rwModeField = "mode"

// decodeRWLock recognises a read-write lock: a hash with the field mode
// ("read" or "write") and one field per holder with its hold count. Its
// per-reader timeout keys are listed raw.
func decodeRWLock(r *report, keys map[string]*key, n internal.Names, _ time.Time) bool {
	k := keys[n.Lock()]
	if k == nil || k.Type != "hash" {
		return false
	}
	h, _ := k.Value.(map[string]string)
	mode, ok := h[rwModeField]
	if !ok {
		return false
	}
	r.Kind, r.Mode = kindRWLock, mode
	r.Holders = holdersOf(h, rwModeField)
	r.TTLms = &k.TTLms
	k.explained = true
	return true
}
