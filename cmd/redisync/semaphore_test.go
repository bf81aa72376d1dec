package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// A counting semaphore's permits are shown, set and added to; nothing
// changes without --force.
func TestSemaphoreCounting(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		s := semaphore.New(b.client(), name)
		_, stderr := mustRun(t, exitUsage, b.args("semaphore", "set", name, "5")...)
		if !strings.Contains(stderr, "add --force") {
			t.Errorf("refusal does not mention --force:\n%s", stderr)
		}
		if n := b.rdb.Exists(ctx, keyspace.NewNames(name).Lock()).Val(); n != 0 {
			t.Fatal("set without --force set the permits")
		}
		stdout, _ := mustRun(t, exitOK, b.args("semaphore", "set", "--force", name, "5")...)
		if want := fmt.Sprintf("%q: no permits set -> 5 permits available", name); !strings.Contains(stdout, want) {
			t.Errorf("set says %q, want %q", stdout, want)
		}
		if err := s.Acquire(ctx, 3); err != nil { // taken by a process that then crashes
			t.Fatal(err)
		}
		stdout, _ = mustRun(t, exitOK, b.args("semaphore", "add", name, "--force", "-1")...)
		if want := fmt.Sprintf("%q: 2 permits available -> 1 permit available", name); !strings.Contains(stdout, want) {
			t.Errorf("add says %q, want %q", stdout, want)
		}
		mustRun(t, exitOK, b.args("semaphore", "add", "--force", name, "3")...)
		if n, err := s.Available(ctx); n != 4 || err != nil {
			t.Fatalf("Available = %d, %v; want 4", n, err)
		}
		stdout, _ = mustRun(t, exitOK, b.args("semaphore", "show", name)...)
		if !strings.Contains(stdout, "permits      4 available") {
			t.Errorf("show lacks the permits:\n%s", stdout)
		}
		_, stderr = mustRun(t, exitFailure, b.args("semaphore", "release", "--force", name, "some-id")...)
		if !strings.Contains(stderr, "a counting semaphore: its permits have no ids") {
			t.Errorf("release on a counting semaphore says:\n%s", stderr)
		}
		_, stderr = mustRun(t, exitFailure, b.args("semaphore", "set", "--force", "--leased", name, "2")...)
		if !strings.Contains(stderr, "not a leased one") {
			t.Errorf("set --leased on a counting semaphore says:\n%s", stderr)
		}
	})
}

// A leased semaphore's permits are listed with their holder's process and
// lease, the total set, and a permit released by its id.
func TestSemaphoreLeased(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		l := semaphore.NewLeased(b.client(), name)
		if err := l.SetPermits(ctx, 2); err != nil {
			t.Fatal(err)
		}
		id, err := l.Acquire(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		r := inspectJSON(t, b.flags, name)[0]
		if !r.Leased || r.Total == nil || *r.Total != 2 || r.Permits == nil || *r.Permits != 1 || len(r.Holders) != 1 ||
			r.Holders[0].ID != id || r.Holders[0].PID != os.Getpid() || r.Holders[0].LeaseMs == nil || *r.Holders[0].LeaseMs <= 0 {
			t.Fatalf("report = %+v; want a leased semaphore of 2, its permit %s held by pid %d", r, id, os.Getpid())
		}
		stdout, _ := mustRun(t, exitOK, b.args("semaphore", "show", "--json", name)...)
		var rs []report
		if err := json.Unmarshal([]byte(stdout), &rs); err != nil || len(rs) != 1 || !rs[0].Leased || rs[0].Total == nil || *rs[0].Total != 2 {
			t.Errorf("semaphore show --json = %v, %v; want the report inspect --json gives", rs, err)
		}
		stdout, _ = mustRun(t, exitOK, b.args("semaphore", "show", name)...)
		for _, want := range []string{"permits      1 available of 2", id + "  lease ", fmt.Sprintf("pid %d on ", os.Getpid())} {
			if !strings.Contains(stdout, want) {
				t.Errorf("show lacks %q:\n%s", want, stdout)
			}
		}
		stdout, _ = mustRun(t, exitOK, b.args("semaphore", "set", "--force", name, "3")...)
		if want := "2 permits in all, 1 available (leased) -> 3 permits in all, 2 available (leased)"; !strings.Contains(stdout, want) {
			t.Errorf("set says %q, want %q", stdout, want)
		}
		stdout, _ = mustRun(t, exitOK, b.args("semaphore", "release", "--force", name, id)...)
		if want := fmt.Sprintf("released permit %q (acquired by pid %d on ", id, os.Getpid()); !strings.Contains(stdout, want) {
			t.Errorf("release says %q, want %q", stdout, want)
		}
		if n, err := l.Available(ctx); n != 3 || err != nil {
			t.Fatalf("Available = %d, %v; want 3", n, err)
		}
		if err := l.Release(ctx, id); !errors.Is(err, semaphore.ErrNotHeld) {
			t.Fatalf("Release of the permit released by the tool = %v, want ErrNotHeld", err)
		}
		_, stderr := mustRun(t, exitFailure, b.args("semaphore", "release", "--force", name, id)...)
		if want := fmt.Sprintf("permit %q not held", id); !strings.Contains(stderr, want) || strings.Contains(stderr, "lock") {
			t.Errorf("a second release says %q, want %q and no word of a lock", stderr, want)
		}
	})
}

// The semaphore command leaves other kinds alone, and makes a name with
// no keys the kind it is told.
func TestSemaphoreOtherKinds(t *testing.T) {
	addr, rdb := miniBackend(t)
	ctx := t.Context()
	flags := []string{"--redis", "redis://" + addr}
	m := rlock.New(rdb, "orders")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctx)
	_, stderr := mustRun(t, exitFailure, append([]string{"semaphore", "set", "--force", "orders", "3"}, flags...)...)
	if !strings.Contains(stderr, `"orders": a mutex, not a semaphore: left untouched`) {
		t.Errorf("set on a lock says:\n%s", stderr)
	}
	mustRun(t, exitOK, append([]string{"semaphore", "set", "--force", "--leased", "workers", "2"}, flags...)...)
	if n, err := semaphore.NewLeased(rdb, "workers").Available(ctx); n != 2 || err != nil {
		t.Fatalf("leased Available = %d, %v; want 2", n, err)
	}
	_, stderr = mustRun(t, exitNothing, append([]string{"semaphore", "show", "nothing"}, flags...)...)
	if !strings.Contains(stderr, `nothing in Redis under "nothing"`) {
		t.Errorf("show on a free name says:\n%s", stderr)
	}
	_, stderr = mustRun(t, exitFailure, append([]string{"semaphore", "release", "--force", "nothing", "x"}, flags...)...)
	if !strings.Contains(stderr, "no such semaphore") {
		t.Errorf("release on a free name says:\n%s", stderr)
	}
}
