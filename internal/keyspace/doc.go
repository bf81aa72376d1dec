// Package keyspace names what redisync keeps in Redis: each primitive's
// keys and channels, all under one hash tag so they share a cluster slot,
// the receipt keys, and the owner ids ("<host>:<pid>:<nonce><n>") that
// hold ids ("<owner id>:<n>") start with.
package keyspace
