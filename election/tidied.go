package election

import (
	"context"

	"github.com/redisync/redisync/internal/perclient"
)

// Tidied waits until the clean-ups left to run in the background by calls
// that gave up have finished (a wait leaving its line, a grant or an
// acquisition of unknown outcome given back), for every redisync primitive
// of this process, or until ctx is done, and then returns ctx's error.
// Call it before os.Exit when a call may have failed: a process that exits
// first can leave a place in line that the next release grants the lock
// to, and every waiter behind it waits out that grant (up to 3s). Each
// clean-up is bounded (a few seconds at most), so a ctx of five seconds
// does.
func Tidied(ctx context.Context) error { return perclient.Tidied(ctx) }
