package lua_test

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/redisync/redisync/lua"
)

// Every script begins with a header naming it and what it does.
func Example() {
	names, _ := fs.Glob(lua.Scripts, "rlock_*.lua")
	for _, name := range names {
		src, _ := lua.Source(name)
		first, _, _ := strings.Cut(src, "\n")
		fmt.Println(first)
	}
	// Output:
	// -- rlock_acquire: take a reentrant lock, or wait in line.
	// -- rlock_forceunlock: delete a reentrant lock whoever holds it, and wake the
	// -- rlock_leave: take a waiter out of the line of a reentrant lock, for a
	// -- rlock_renew: extend the lease of a reentrant lock if the hold stands.
	// -- rlock_unlock: release a reentrant lock's hold and grant the lock to the
}

// A script names a shared fragment on a line of its own; Source returns
// the text Redis runs, with the part pasted in.
func ExampleSource() {
	src, _ := lua.Source("latch_delete.lua")
	fmt.Println(strings.Contains(src, "-- part: "), strings.Contains(src, "-- part late:"))
	// Output: false true
}
