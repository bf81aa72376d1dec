package hold_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/hold"
)

func TestKeepingConfig(t *testing.T) {
	release := func(context.Context, hold.Mode, string, uint64, bool) (hold.Released, error) {
		return hold.Released{}, nil
	}
	renew := func(context.Context, redis.Scripter, string) func() (bool, error) { return nil }
	var got error
	wrap := func(err error) error { return fmt.Errorf("pkg: %w", err) }

	k := hold.Keeping{WatchdogTimeout: time.Minute}
	hold.OnLost(func(err error) { got = err })(&k)
	c := k.Config(nil, release, renew, wrap)
	if c.Lease != time.Minute || c.Renew == nil || c.Release == nil {
		t.Fatalf("watchdog config: lease %v, renew set %v", c.Lease, c.Renew != nil)
	}
	c.Lost(errors.New("gone"))
	if got == nil || got.Error() != "pkg: gone" {
		t.Fatalf("OnLost got %v, want the wrapped loss", got)
	}

	hold.LeaseTime("pkg", time.Second)(&k)
	if c := k.Config(nil, release, renew, wrap); c.Lease != time.Second || c.Renew != nil {
		t.Fatalf("fixed lease config: lease %v, renew set %v; want 1s and no renewal", c.Lease, c.Renew != nil)
	}
	if c := (hold.Keeping{WatchdogTimeout: time.Minute}).Config(nil, release, renew, wrap); c.Lost != nil {
		t.Fatal("Lost set without OnLost")
	}
}

func TestKeepingPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"WithLeaseTime":       func() { hold.LeaseTime("pkg", 0) },
		"WithWatchdogTimeout": func() { hold.WatchdogTimeout("pkg", hold.MinWatchdogTimeout-1) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if s, _ := recover().(string); !strings.HasPrefix(s, "pkg: "+name+"(") {
					t.Fatalf("panic %q, want one naming the package and the option", s)
				}
			}()
			f()
		})
	}
	hold.WatchdogTimeout("pkg", hold.MinWatchdogTimeout) // the least allowed
}
