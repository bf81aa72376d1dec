package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/redisync/redisync/internal"
)

// rwModeField is the field of an rwlock's hash that says how it is held.
const rwModeField = "mode"

// decodeRWLock recognises a read-write lock: a hash with the field mode
// ("read" or "write") and one field per holder (r:<owner> for a reader,
// w:<owner> for the writer) with its hold count. Each reader's timeout key
// carries its own lease; the writers zset holds the waiting writers'
// announcements, which hold new readers back.
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
	for name, rk := range keys {
		if strings.HasPrefix(name, n.ReaderPrefix()) && rk.Type == "string" {
			rk.explained = true
		}
	}
	if w := keys[n.Writers()]; w != nil && w.Type == "zset" {
		zs, _ := w.Value.([]map[string]any)
		r.note = fmt.Sprintf("%d writer(s) waiting ahead of new readers", len(zs))
		w.explained = true
	}
	return true
}
