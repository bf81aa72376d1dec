package main

import (
	"time"

	"github.com/redisync/redisync/internal"
)

// decodeSemaphore recognises a semaphore: its available permits are an
// integer string. A leased semaphore's further keys (permit ids and their
// leases) are listed raw.
func decodeSemaphore(r *report, keys map[string]*key, n internal.Names, _ time.Time) bool {
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
	return true
}
