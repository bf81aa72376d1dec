package redistest

import (
	"testing"

	"go.uber.org/goleak"
)

// leakOptions are what every goroutine-leak check of the project ignores.
//
// go-redis retries dialling a server it cannot reach from a goroutine that
// sleeps a second between tries and notices only then that its client was
// closed: after a test that stops a server under a live client, it ends by
// itself within a second, later than goleak's own retries wait.
var leakOptions = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
}

// VerifyNone is goleak.VerifyNone with the project's leakOptions.
func VerifyNone(t testing.TB, opts ...goleak.Option) {
	t.Helper()
	goleak.VerifyNone(t, append(opts, leakOptions...)...)
}
