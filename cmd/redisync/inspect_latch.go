package main

import (
	"time"

	"github.com/redisync/redisync/internal/keyspace"
)

// decodeLatch recognises a count-down latch: its count, a positive
// integer string, under redisync:{name}:latch. A latch at zero has no
// count key; the receipts of its last calls, which expire within seconds,
// may still show that it was one.
func decodeLatch(r *report, keys map[string]*key, n keyspace.Names, _ time.Time) bool {
	k := keys[n.Latch()]
	var count int64
	if k != nil {
		v, ok := parseInt(k.Value)
		if k.Type != "string" || !ok || v <= 0 {
			return false // not a count: listed raw
		}
		count, k.explained = v, true
	}
	note, receipts := explainReceipts(keys, n, keyspace.LatchReceiptKinds...)
	if k == nil && note == "" {
		return false
	}
	r.Kind, r.Count, r.note, r.Receipts = kindLatch, &count, note, receipts
	if k == nil {
		r.note = "at zero, " + note
	}
	return true
}
