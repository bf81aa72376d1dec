package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/exactly"
)

// decodeSemaphore recognises a semaphore: its available permits are an
// integer string. A leased semaphore's further keys (permit ids and their
// leases) are listed raw.
func decodeSemaphore(r *report, keys map[string]*key, n keyspace.Names, _ time.Time) bool {
	k := keys[n.Lock()]
	if k == nil || k.Type != "string" {
		return false
	}
	v, ok := parseInt(k.Value)
	if !ok {
		return false
	}
	r.Kind, r.Permits = kindSemaphore, &v
	k.explained = true
	r.note, r.Receipts = explainReceipts(keys, n, keyspace.ReceiptKinds...)
	return true
}

// explainReceipts marks the receipt keys of the given kinds: a
// semaphore's recent requests (redisync:{name}:acquire:<id>,
// :release:<id>, :set:<id>, :drain:<id>, :add:<id>) or a latch's
// (:latch:countdown:<id>, ...), which make a retried request exact and
// expire by themselves, and returns a note saying how many there are, or
// "", and the kind of each, sorted.
func explainReceipts(keys map[string]*key, n keyspace.Names, kinds ...string) (string, []string) {
	var found []string
	lifetime := exactly.ReceiptTTL
	for name, k := range keys {
		for _, kind := range kinds {
			if strings.HasPrefix(name, n.ReceiptPrefix(kind)) && k.Type == "string" {
				k.explained = true
				found = append(found, kind)
				if kind == keyspace.ReceiptAcquire {
					// Deleted once settled; the hour is a safety net.
					lifetime = max(lifetime, exactly.AcquireReceiptTTL)
				}
				break
			}
		}
	}
	if len(found) == 0 {
		return "", nil
	}
	slices.Sort(found)
	return fmt.Sprintf("%d request receipt(s), expiring within %s", len(found), hours(lifetime)), found
}

// hours formats d as "1h" rather than "1h0m0s" when it is whole hours.
func hours(d time.Duration) string {
	if d >= time.Hour && d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}

// decodeLeased recognises a leased semaphore: its total permits are an
// integer string under :permits and its acquired permits a zset of permit
// id -> lease expiry (server clock, Unix ms) under the main key. Available
// permits are the total minus the permits whose lease has not run out;
// each acquired permit is shown as a holder (of those read: see keyLimit).
func decodeLeased(r *report, keys map[string]*key, n keyspace.Names, now time.Time) bool {
	total, leases := keys[n.Sub("permits")], keys[n.Lock()]
	if total == nil || total.Type != "string" || (leases != nil && leases.Type != "zset") {
		return false
	}
	v, ok := parseInt(total.Value)
	if !ok {
		return false
	}
	all := v
	if leases != nil {
		zs, _ := leases.Value.([]map[string]any)
		for _, z := range zs {
			id, _ := z["member"].(string)
			expiry, _ := z["score"].(float64)
			if left := int64(expiry) - now.UnixMilli(); left > 0 {
				r.Holders = append(r.Holders, holder{ID: id, process: processOf(id), Count: 1, LeaseMs: &left})
			}
		}
		v -= leases.live
		leases.explained = true
	}
	r.Kind, r.Permits, r.Total, r.Leased, r.note = kindSemaphore, &v, &all, true, "leased"
	note, receipts := explainReceipts(keys, n, keyspace.ReceiptKinds...)
	if note != "" {
		r.note += ", " + note
	}
	r.Receipts = receipts
	total.explained = true
	return true
}
