// Package keyspace names what redisync keeps in Redis: the keys and
// channels of each primitive (one hash tag per name, so that a primitive's
// keys share a cluster slot), the receipt keys of requests that count
// once, and the ids that name their holders: a handle's owner id
// ("<host>:<pid>:<nonce><n>", readable by an operator) and the hold ids made
// from it ("<owner id>:<n>", see package hold).
package keyspace
