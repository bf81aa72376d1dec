// Package lua holds the Lua scripts behind every redisync primitive, for
// auditing: each state change of a primitive is exactly one of these
// scripts, so it is atomic on the Redis server.
//
// Files are named <primitive>_<operation>.lua, and each starts with a
// header giving its KEYS, ARGV and reply. Every key a script touches is
// passed in KEYS and shares the primitive's hash tag, so a script runs in
// one slot of a Redis Cluster (the read-write lock's per-reader timeout
// keys, derived inside its scripts from a prefix in KEYS, are the one
// exception; their headers say so).
//
// The library runs them itself; nothing here needs to be called to use it.
// [Source] returns one script's text, and [Scripts] holds them all.
package lua

import "embed"

// Scripts holds every script, as .lua files at its root.
//
//go:embed *.lua
var Scripts embed.FS

// Source returns the text of the script in file name, such as
// "rlock_acquire.lua".
func Source(name string) (string, error) {
	b, err := Scripts.ReadFile(name)
	return string(b), err
}
