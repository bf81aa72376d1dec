package hold

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/redistest"
)

// A grant to a handle with a grant lease of its own (fairlock's waiter
// timeout, shorter than GrantLease) is valid for that long from its base,
// not GrantLease: the server's grant lapses then. 800ms after its base,
// less than a quarter of a 1s grant is left, and Claim leaves the grant
// to an attempt; with the default grant lease it completes it.
func TestClaimWithShortGrantLease(t *testing.T) {
	_, rdb := redistest.Mini(t)
	renew := func(context.Context, redis.Scripter, string) func() (bool, error) {
		return func() (bool, error) { return true, nil }
	}
	base := time.Now().Add(-800 * time.Millisecond)
	for _, c := range []struct {
		grantLease time.Duration
		claimed    bool
	}{{time.Second, false}, {0, true}} {
		tk := New(Config{RDB: rdb, Lease: time.Minute, Renew: renew, GrantLease: c.grantLease})
		ok, err := tk.claim(t.Context(), Exclusive, 0, base, tk.waitID(nil), nil)
		if err != nil || ok != c.claimed {
			t.Errorf("grant lease %v: Claim 800ms after its base = %v, %v; want %v", c.grantLease, ok, err, c.claimed)
		}
		if ok {
			tk.Drop()
		}
	}
}

// A waiter's place holds its hold id and, after "#", its attempt, "f" first when a grant to it takes a
// fencing token, and its own grant lease in milliseconds last, if it has
// one: what the acquire scripts write, for the keeper to recognise.
func TestPlaceValue(t *testing.T) {
	for _, c := range []struct {
		id      string
		fencing bool
		lease   time.Duration
		want    string
	}{
		{"h:1:u:12", false, 0, "h:1:u:12#7"},
		{"h:1:u:12", true, 0, "fh:1:u:12#7"},
		{"h:1:u:12", false, time.Second, "h:1:u:12#7/1000"},
		{"h:1:u:12", true, 1500*time.Millisecond + 700*time.Microsecond, "fh:1:u:12#7/1500"},
	} {
		if got := placeValue(c.id, 7, c.fencing, c.lease); got != c.want {
			t.Errorf("placeValue(%v, %v, %v) = %q, want %q", c.id, c.fencing, c.lease, got, c.want)
		}
	}
}
