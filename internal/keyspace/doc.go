// Package keyspace names what redisync keeps in Redis: keys and channels
// (one hash tag, so one cluster slot, per name), receipts and owner ids.
package keyspace
