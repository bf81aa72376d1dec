package multilock

import "context"

// lockAll takes every member in canonical order: blocking, each member
// waiting its own way (a redisync lock sleeps on its release
// notifications, a fair lock in its line), or one attempt each. Waiting
// for a member while holding the ones before it cannot deadlock with
// another group: every group takes the members they share in the same
// order, so whichever holds the first shared member will get the rest.
//
// Whatever stops it (ctx, a member taken, a member's error) gives back
// what it took before it returns. A member whose fixed lease ran out
// while later members were awaited leaves the group without it: Lock
// then gives everything back and starts again, TryLock reports false.
func (g *Group) lockAll(ctx context.Context, try bool) (bool, error) {
	for {
		taken := make([]int, 0, len(g.members))
		for i, m := range g.members {
			ok, err := true, error(nil)
			if try {
				ok, err = m.TryLock(ctx)
			} else {
				err = m.Lock(ctx)
			}
			if err != nil || !ok {
				// An undo error is the members' to report: the lease of
				// what could not be given back runs out by itself.
				_ = g.release(ctx, taken)
				return false, err
			}
			taken = append(taken, i)
		}
		if g.keep(taken) {
			return true, nil
		}
		_ = g.release(ctx, taken)
		if try {
			return false, nil
		}
	}
}
