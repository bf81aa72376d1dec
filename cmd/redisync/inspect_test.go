package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"

	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// inspectJSON runs inspect --json and decodes its reports.
func inspectJSON(t *testing.T, flags []string, names ...string) []report {
	t.Helper()
	args := append(append(append([]string{"inspect"}, flags...), names...), "--json")
	code, stdout, stderr := runCmd(t, args...)
	if code != exitOK && code != exitNothing {
		t.Fatalf("redisync %s: exit code %d\nstderr:\n%s", strings.Join(args, " "), code, stderr)
	}
	var rs []report
	if err := json.Unmarshal([]byte(stdout), &rs); err != nil {
		t.Fatalf("inspect --json output is no JSON array of reports: %v\n%s", err, stdout)
	}
	if len(rs) != len(names) {
		t.Fatalf("%d reports for %d names", len(rs), len(names))
	}
	return rs
}

func TestInspectHeldRLock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		holder := rlock.New(b.rdb, name, rlock.WithFencing())
		// Held twice: Do, and a re-entry through its ctx, until the test
		// is done with it. Redis sees one level: re-entry is counted in
		// the process.
		held, release, done := make(chan error, 1), make(chan struct{}), make(chan error, 1)
		go func() {
			done <- holder.Do(ctx, func(ctx context.Context) error {
				err := holder.Lock(ctx)
				held <- err
				if err != nil {
					return err
				}
				<-release
				return holder.Unlock(ctx)
			})
		}()
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		defer func() {
			close(release)
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		owners := slices.Collect(maps.Keys(redistest.Holders(ctx, b.rdb, keyspace.NewNames(name).Lock())))
		if len(owners) != 1 {
			t.Fatalf("holders = %v, want one", owners)
		}
		// A waiter in another client, in line.
		waiterCtx, stopWaiter := context.WithCancel(ctx)
		waited := make(chan error, 1)
		go func() { waited <- rlock.New(b.client(), name).Lock(waiterCtx) }()
		defer func() { stopWaiter(); <-waited }()
		redistest.WaitFor(t, 5*time.Second, func() bool {
			return b.rdb.LLen(ctx, keyspace.NewNames(name).Queue()).Val() == 1
		})

		r := inspectJSON(t, b.flags, name)[0]
		if r.Kind != kindMutex || len(r.Holders) != 1 || r.Holders[0].ID != owners[0] || r.Holders[0].Count != 1 || len(r.Queue) != 1 ||
			r.Queue[0].RemainingMs <= 0 || r.Queue[0].RemainingMs > rlock.WaiterTimeout.Milliseconds() {
			t.Errorf("report = %+v; want a mutex held (one level in Redis) by %s with one waiter in line, its deadline within the waiter timeout", r, owners[0])
		}
		if r.TTLms == nil || *r.TTLms <= 0 || *r.TTLms > rlock.DefaultWatchdogTimeout.Milliseconds() {
			t.Errorf("ttl_ms = %v, want within the watchdog lease", r.TTLms)
		}
		if r.Fence == nil || *r.Fence != int64(holder.Token()) {
			t.Errorf("fence = %v, want the holder's token %d", r.Fence, holder.Token())
		}
		if r.Token == nil || *r.Token != int64(holder.Token()) {
			t.Errorf("token = %v, want the holder's %d", r.Token, holder.Token())
		}
		// Owner ids name their process: this test's.
		me := process{Host: processOf(owners[0]).Host, PID: os.Getpid()}
		if me.Host == "" || r.Holders[0].process != me || r.Queue[0].process != me {
			t.Errorf("holder's process %+v, waiter's %+v; want pid %d and a host", r.Holders[0].process, r.Queue[0].process, os.Getpid())
		}
		stdout, _ := mustRun(t, exitOK, b.args("inspect", name)...)
		for _, want := range []string{"kind         mutex", "waiters in line", owners[0] + "  holds 1" + me.about(), "ttl          ", "fence", "expires in", "token        " + strconv.FormatUint(holder.Token(), 10), "1. "} {
			if !strings.Contains(stdout, want) {
				t.Errorf("text output lacks %q:\n%s", want, stdout)
			}
		}
	})
}

// TestInspectKinds writes each kind's layout by hand, as the primitives
// that are not built in yet would leave it.
func TestInspectKinds(t *testing.T) {
	mr, rdb := redistest.Mini(t)
	addr := mr.Addr()
	now := time.UnixMilli(1_800_000_000_000)
	mr.SetTime(now) // the server clock inspect reads deadlines against
	ctx := t.Context()
	fair, rw, sem, odd := keyspace.NewNames("jobs"), keyspace.NewNames("catalog"), keyspace.NewNames("db-slots"), keyspace.NewNames("odd")
	leased := keyspace.NewNames("workers")
	rdb.HSet(ctx, fair.Lock(), "owner-a", 1)
	rdb.PExpire(ctx, fair.Lock(), 30*time.Second)
	rdb.RPush(ctx, fair.Queue(), "w1", "w2")
	rdb.ZAdd(ctx, fair.Timeouts(), redis.Z{Member: "w1", Score: float64(now.UnixMilli() + 9000)}, redis.Z{Member: "w2", Score: float64(now.UnixMilli() + 19000)})
	rdb.Set(ctx, fair.Place("w1"), "3", 3*time.Second) // w2's place lapsed: it went silent
	// The layout rwlock leaves with three readers: one of this release,
	// whose field holds its read level's tag, and two of an earlier one,
	// whose fields count their levels.
	rdb.HSet(ctx, rw.Lock(), "mode", "read", "r:o1", 1, "r:web-2:99:o2", 3, "r:web-3:7:k3J9xQ2mZp1:4", 42)
	rdb.Set(ctx, rw.ReaderPrefix()+"o1", 1, time.Minute)
	rdb.Set(ctx, rw.ReaderPrefix()+"o2", 1, time.Minute)
	rdb.ZAdd(ctx, rw.Writers(), redis.Z{Member: "w1", Score: float64(now.UnixMilli() + 2000)},
		redis.Z{Member: "w0", Score: float64(now.UnixMilli() - 500)}) // a crashed writer's, lapsed
	rdb.ZAdd(ctx, rw.Turn(), redis.Z{Member: "o3", Score: float64(now.UnixMilli() + 1500)}) // a reader yet to come
	rdb.Set(ctx, sem.Lock(), 7, 0)
	rdb.Set(ctx, sem.Sub("release:r1"), 1, 10*time.Second) // a recent Release's receipt
	rdb.Set(ctx, odd.Lock(), "hello", 0)
	// A leased semaphore of 3 permits, one acquired, after an AddPermits.
	rdb.Set(ctx, leased.Sub("permits"), 3, 0)
	rdb.ZAdd(ctx, leased.Lock(), redis.Z{Member: "web-7:4121:p1", Score: float64(now.UnixMilli() + 30000)})
	rdb.Set(ctx, leased.Receipt(keyspace.ReceiptAdd, "r2"), 1, 10*time.Second)
	// A counting semaphore holding permits acquired in two requests.
	slots := keyspace.NewNames("pool")
	rdb.Set(ctx, slots.Lock(), 1, 0)
	rdb.Set(ctx, slots.Receipt(keyspace.ReceiptAcquire, "a1"), 2, time.Hour)
	rdb.Set(ctx, slots.Receipt(keyspace.ReceiptAcquire, "a2"), "x", time.Hour)
	flags := []string{"--redis", "redis://" + addr}

	rs := inspectJSON(t, flags, "jobs", "catalog", "db-slots", "odd", "nothing", "workers", "pool")
	if r := rs[0]; r.Kind != kindFairlock || len(r.Queue) != 2 || r.Queue[0].ID != "w1" || r.Queue[1].ID != "w2" ||
		r.Queue[0].RemainingMs != 9000 || len(r.Holders) != 1 || r.Queue[0].Lapsed || !r.Queue[1].Lapsed {
		t.Errorf("fair lock report = %+v", r)
	}
	if r := rs[1]; r.Kind != kindRWLock || r.Mode != "read" || len(r.Holders) != 3 || r.Holders[1] != (holder{ID: "r:web-2:99:o2", process: process{Host: "web-2", PID: 99}, Count: 3}) ||
		r.Holders[0].process != (process{}) || r.Holders[2] != (holder{ID: "r:web-3:7:k3J9xQ2mZp1:4", process: process{Host: "web-3", PID: 7}, Count: 1}) {
		t.Errorf("rwlock report = %+v", r)
	}
	if r := rs[2]; r.Kind != kindSemaphore || r.Permits == nil || *r.Permits != 7 {
		t.Errorf("semaphore report = %+v", r)
	}
	if r := rs[3]; r.Kind != kindUnknown || len(r.Keys) != 1 || r.Keys[0].Value != "hello" {
		t.Errorf("unknown report = %+v", r)
	}
	if r := rs[4]; r.Kind != kindFree || len(r.Keys) != 0 {
		t.Errorf("free report = %+v", r)
	}
	if r := rs[5]; r.Kind != kindSemaphore || r.Permits == nil || *r.Permits != 2 || len(r.Holders) != 1 ||
		r.Holders[0].process != (process{Host: "web-7", PID: 4121}) || r.Holders[0].LeaseMs == nil || *r.Holders[0].LeaseMs != 30000 {
		t.Errorf("leased semaphore report = %+v", r)
	}

	stdout, stderr := mustRun(t, exitNothing, "inspect", "--redis", "redis://"+addr, "jobs", "catalog", "db-slots", "odd", "nothing", "workers", "pool")
	if want := `nothing in Redis under "nothing"`; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	for _, want := range []string{
		"queue        1. w1  deadline in 9.00s", "2. w2  deadline in 19.0s; place lapsed",
		"mode         read", "readers      r:o1  holds 1\n", "r:web-2:99:o2  holds 3  pid 99 on web-2", "r:web-3:7:k3J9xQ2mZp1:4  holds 1  pid 7 on web-3",
		"holder       web-7:4121:p1  lease 30.0s  pid 4121 on web-7", "1 writer(s) waiting ahead of new readers (1 more lapsed); 1 reader(s) to come ahead of new writers",
		"permits      7 available", "semaphore (1 request receipt(s), expiring within 10s)",
		`key          redisync:{odd}  string  ttl none  "hello"`,
		"kind         free (nothing in Redis under this name)",
		"semaphore (leased, 1 request receipt(s), expiring within 10s)",
		"semaphore (2 request receipt(s), expiring within 1h)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text output lacks %q:\n%s", want, stdout)
		}
	}
	// Between holders: free, with readers whose turn it is yet to come.
	gap := keyspace.NewNames("gap")
	rdb.ZAdd(ctx, gap.Turn(), redis.Z{Member: "o4", Score: float64(now.UnixMilli() + 1500)})
	if r := inspectJSON(t, flags, "gap")[0]; r.Kind != kindRWLock || r.Mode != "free" || len(r.Holders) != 0 {
		t.Errorf("free rwlock report = %+v", r)
	}
	// Keys a decoder explains are not listed as unexplained.
	for _, explained := range []string{rw.ReaderPrefix() + "o1", rw.Writers(), rw.Turn(), fair.Queue(), sem.Sub("release:r1"), leased.Receipt(keyspace.ReceiptAdd, "r2"), slots.Receipt(keyspace.ReceiptAcquire, "a1")} {
		if strings.Contains(stdout, explained) {
			t.Errorf("text output lists %s, a key its report explains:\n%s", explained, stdout)
		}
	}
}

// A Redis key given for a NAME gets a hint naming the name it belongs to.
func TestInspectKeyHint(t *testing.T) {
	addr, rdb := miniBackend(t)
	flags := []string{"--redis", "redis://" + addr}
	if err := semaphore.New(rdb, "job").SetPermits(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	rs := inspectJSON(t, flags, "redisync:{job}", "redisync:{job}:queue", "redisync:{a}b}:queue", "job", "redisync:job", "nothing")
	for i, want := range []string{"job", "job", "a}b"} {
		if hint := fmt.Sprintf("is a Redis key of the name %q", want); rs[i].Kind != kindFree || !strings.Contains(rs[i].Hint, hint) {
			t.Errorf("report on %q = %+v; want free, with a hint saying %q", rs[i].Name, rs[i], hint)
		}
	}
	for _, r := range rs[3:] {
		if r.Hint != "" {
			t.Errorf("report on %q has a hint: %q", r.Name, r.Hint)
		}
	}
	stdout, _ := mustRun(t, exitNothing, append([]string{"inspect", "redisync:{job}"}, flags...)...)
	if want := `hint         "redisync:{job}" is a Redis key of the name "job": NAME is the name given to New; try: redisync inspect "job"`; !strings.Contains(stdout, want) {
		t.Errorf("text output lacks %q:\n%s", want, stdout)
	}
	_, stderr := mustRun(t, exitFailure, append([]string{"unlock", "--force", "redisync:{job}"}, flags...)...)
	if want := `try: redisync unlock --force "job"`; !strings.Contains(stderr, want) {
		t.Errorf("unlock of a key says %q, want %q", stderr, want)
	}
}

func TestNameOfKey(t *testing.T) {
	for key, want := range map[string]string{
		"redisync:{job}":                   "job",
		"redisync:{job}:queue":             "job",
		"redisync:{orders:42}:place:h:1:u": "orders:42",
		"redisync:{a}b}":                   "a}b",
		"redisync:{}":                      "",
		"redisync:{job":                    "",
		"redisync:{job}x":                  "",
		"job":                              "",
	} {
		got, ok := nameOfKey(key)
		if got != want || ok != (want != "") {
			t.Errorf("nameOfKey(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
}
