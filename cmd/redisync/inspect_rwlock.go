package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
)

// rwModeField is the field of an rwlock's hash that says how it is held.
const rwModeField = "mode"

// decodeRWLock recognises a read-write lock: a hash with the field mode
// ("read" or "write") and one field per hold (r:<hold id> for a reader,
// w:<hold id> for the writer). A hold has one level of each mode in
// Redis: a reader's field holds the tag of its read level, which is
// reported as 1 (an earlier release's r:<owner id> held a count, reported
// as it is). Each reader's timeout key
// carries its own lease; the writers zset holds the waiting writers'
// announcements, which hold new readers back; the readers zset holds the
// waiting readers' announcements, and the turn zset the readers that
// waited behind the last write hold, which hold new writers back.
//
// Between holders the lock may be free while those zsets remain: readers
// whose turn it is, or announced waiters; that is reported as an rwlock
// with mode "free".
func decodeRWLock(r *report, keys map[string]*key, n keyspace.Names, now time.Time) bool {
	var notes []string
	var waiting []*key
	for _, z := range []struct{ key, note string }{
		{n.Writers(), "%d writer(s) waiting ahead of new readers"},
		{n.Readers(), "%d reader(s) waiting"},
		{n.Turn(), "%d reader(s) to come ahead of new writers"},
	} {
		if k := keys[z.key]; k != nil && k.Type == "zset" {
			// A member's score is when it lapses (server time, ms); the
			// scripts remove lapsed ones only when they look.
			note := fmt.Sprintf(z.note, k.live)
			if lapsed := k.Size - k.live; lapsed > 0 {
				note += fmt.Sprintf(" (%d more lapsed)", lapsed)
			}
			notes = append(notes, note)
			waiting = append(waiting, k)
		}
	}
	if k := keys[n.Lock()]; k != nil {
		if k.Type != "hash" {
			return false
		}
		h, _ := k.Value.(map[string]string)
		mode, ok := h[rwModeField]
		if !ok {
			return false
		}
		r.Mode = mode
		r.Holders = holdersOf(h, rwModeField)
		for i, hd := range r.Holders {
			// A field is the mode's letter and the hold (or owner) id.
			mode, id, _ := strings.Cut(hd.ID, ":")
			r.Holders[i].process = processOf(id)
			if mode == "r" && isHoldID(id) {
				r.Holders[i].Count = 1 // the value is the level's tag
			}
		}
		r.TTLms = &k.TTLms
		k.explained = true
	} else if len(waiting) == 0 {
		return false
	} else {
		r.Mode = "free"
	}
	r.Kind = kindRWLock
	for name, rk := range keys {
		if strings.HasPrefix(name, n.ReaderPrefix()) && rk.Type == "string" {
			rk.explained = true
		}
	}
	for _, k := range waiting {
		k.explained = true
	}
	r.note = strings.Join(notes, "; ")
	return true
}

// isHoldID reports whether id is a hold id, "<owner id>:<n>", rather than
// an owner id of an earlier release ("<host>:<pid>:<uuid>"): a host name
// in an id holds no ':' (see keyspace.NewOwnerID).
func isHoldID(id string) bool {
	_, ok := keyspace.ParseOwner(id)
	return ok && strings.Count(id, ":") == 3
}
