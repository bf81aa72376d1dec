package perclient

import "time"

// SetKeeperWall makes the keeper of c read the client's wall clock with
// wall, so that a test can step it. Call it before anything of c's client
// is kept.
func SetKeeperWall(c *Client, wall func() time.Time) { c.keeper.wall = wall }
