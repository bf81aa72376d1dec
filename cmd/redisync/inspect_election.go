package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
)

// valueField is the field of an election's hash that holds the leader's
// value.
const valueField = "@value"

// decodeElection recognises an election (package election): the hash of a
// fair lock whose holder is the leader, with its value ('@value') and
// term ('@token'), the candidates' line as a fair lock's, and each
// waiting candidate's value in redisync:{name}:value:<owner id>.
func decodeElection(r *report, keys map[string]*key, n keyspace.Names, now time.Time) bool {
	lock := keys[n.Lock()]
	var h map[string]string
	if lock != nil && lock.Type == "hash" {
		h, _ = lock.Value.(map[string]string)
	}
	value, leads := h[valueField]
	values := map[string]*key{}
	for k, v := range keys {
		if id, ok := strings.CutPrefix(k, n.Value("")); ok && v.Type == "string" {
			values[id] = v
		}
	}
	if !leads && len(values) == 0 {
		return false
	}
	if !decodeFairlock(r, keys, n, now) && lock != nil {
		r.Holders = holdersOf(h)
		r.TTLms = &lock.TTLms
		lock.explained = true
	}
	r.Kind, r.note = kindElection, ""
	if leads {
		r.Value = &value
	} else {
		r.note = "nobody leads"
	}
	for i, q := range r.Queue {
		if k := values[q.ID]; k != nil {
			r.Queue[i].Value, _ = k.Value.(string)
		}
	}
	for _, k := range values {
		k.explained = true
	}
	return true
}

// shortValue shows a value of up to 64 KiB on one line of text.
func shortValue(v string) string {
	const most = 80
	if len(v) <= most {
		return strconv.Quote(v)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(v[:most]), len(v))
}
