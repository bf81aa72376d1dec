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
// A fragment that several scripts share (the late check, the fencing
// token rule, reading a semaphore's permits) is written once, in
// part/<name>.lua, and a script names it on a line of its own, "-- part:
// <name>". [Source] returns the script with each such line replaced by
// the part's text: exactly the text Redis runs, which is what a reader
// audits. Parts say which locals they need and define; they are pasted,
// not called, so a script reads top to bottom (part token defines a local
// function, takeToken, which the script calls where a hold takes a token).
//
// Every notification (PUBLISH, SPUBLISH) is made with redis.pcall, after
// the script's changes: a server that refuses it (an ACL user without
// channel rights, whose PUBLISH raises "can't publish to the channel")
// would otherwise fail the script after its writes, reporting a release
// that happened as failed. Waiters that cannot subscribe poll instead
// (see internal/wait), so a notification nobody can hear costs nothing
// but itself.
//
// The library runs them itself; nothing here needs to be called to use it.
// [Source] returns one script's text, and [Scripts] holds them all.
package lua

import (
	"embed"
	"fmt"
	"strings"
)

// Scripts holds every script, as .lua files at its root, as written (see
// Source for the text Redis runs).
//
//go:embed *.lua
var Scripts embed.FS

//go:embed part/*.lua
var parts embed.FS

// partLine starts a line that names a part.
const partLine = "-- part: "

// Source returns the text Redis runs for the script in file name, such as
// "rlock_acquire.lua": the file with each "-- part: <name>" line replaced
// by part/<name>.lua. A part line must start its line: an indented one is
// an error, not a comment.
func Source(name string) (string, error) {
	b, err := Scripts.ReadFile(name)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for line := range strings.Lines(string(b)) {
		part, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), partLine)
		if !ok {
			if strings.HasPrefix(strings.TrimLeft(line, " \t"), strings.TrimSpace(partLine)) {
				// Indented, it would stay a comment: the part's code
				// silently missing from the script.
				return "", fmt.Errorf("%s: a part line must start at the beginning of its line: %q", name, strings.TrimSpace(line))
			}
			out.WriteString(line)
			continue
		}
		p, err := parts.ReadFile("part/" + part + ".lua")
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		out.Write(p)
	}
	return out.String(), nil
}
