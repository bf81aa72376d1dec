package script_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/internal/script"
)

// A level of the owner's that the caller says it does not hold (the other
// mode's count sent as 0) belongs to a hold its handle gave up: a read
// attempt is refused under such a write level, a write attempt that takes
// the owner's write hold on drops such a read level, and a write attempt
// under such a read level is refused as behind another reader, not as an
// upgrade. With the count not sent (-1), the owner's levels are the
// caller's, as before.
func TestRWLockDisownedLevels(t *testing.T) {
	tiers(t, func(t *testing.T, rdb *redis.Client) {
		ctx := t.Context()
		read := func(name string, reads, writes int64, mark uint64) script.RWHolds {
			t.Helper()
			h, err := script.RWReadTake(ctx, rdb, internal.NewNames(name).RWKeys("a"), script.RWReadArgs{
				Owner: "a", Lease: time.Minute, Reads: reads, Patience: time.Second,
				Mark: mark, Deadline: redistest.InTime(), Writes: writes,
			}).Result()
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		write := func(name string, writes, reads int64, mark uint64) script.RWHolds {
			t.Helper()
			h, err := script.RWWriteTake(ctx, rdb, internal.NewNames(name).RWKeys("a"), script.RWWriteArgs{
				Owner: "a", Lease: time.Minute, Writes: writes, Patience: time.Second,
				Mark: mark, Deadline: redistest.InTime(), Reads: reads,
			}).Result()
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		fields := func(name string) map[string]string {
			return rdb.HGetAll(context.WithoutCancel(ctx), internal.NewNames(name).Lock()).Val()
		}

		name := redistest.UniqueName(t)
		if h := write(name, 0, 0, 1); !h.OK || h.Writes != 1 {
			t.Fatalf("first write = %+v, want one write level", h)
		}
		if h := read(name, 0, 0, 2); h.OK {
			t.Fatalf("read under the owner's write level the caller does not count = %+v, want refused (%v)", h, fields(name))
		}
		if _, ok := fields(name)["r:a"]; ok {
			t.Fatalf("the refused read left a read level: %v", fields(name))
		}
		if h := read(name, 0, 1, 3); !h.OK || h.Reads != 1 || h.Writes != 1 {
			t.Fatalf("read under the caller's own write level = %+v, want one level of each", h)
		}
		if h := read(name, 1, -1, 4); !h.OK || h.Reads != 2 {
			t.Fatalf("read re-entry with the write count not sent = %+v, want two read levels", h)
		}

		// The write hold and its two read levels given up: a write attempt
		// that says it holds no read level takes the write hold on alone.
		if h := write(name, 0, 0, 5); !h.OK || h.Writes != 1 || h.Reads != 0 {
			t.Fatalf("write taking on the hold given up = %+v, want one write level and no read level", h)
		}
		if f := fields(name); f["r:a"] != "" || f["@r:a"] != "" {
			t.Fatalf("the read level given up is still there: %v", f)
		}
		if h := write(name, 0, 0, 5); !h.OK || h.Writes != 1 || h.Reads != 0 {
			t.Fatalf("resent write = %+v, want the same one write level", h)
		}

		// Read holds given up, two levels: a read attempt that holds none
		// takes them on as one level, and a resend reports that level.
		name = redistest.UniqueName(t)
		read(name, 0, 0, 1)
		if h := read(name, 1, 0, 2); !h.OK || h.Reads != 2 {
			t.Fatalf("read re-entry = %+v, want two levels", h)
		}
		if h := read(name, 0, 0, 3); !h.OK || h.Reads != 1 {
			t.Fatalf("read taking on two levels given up = %+v, want one level", h)
		}
		if h := read(name, 0, 0, 3); !h.OK || h.Reads != 1 {
			t.Fatalf("resent read = %+v, want the same one level", h)
		}

		// A read hold given up: a write attempt that says it holds no read
		// level waits behind it, as behind another reader's.
		name = redistest.UniqueName(t)
		if h := read(name, 0, 0, 1); !h.OK || h.Reads != 1 {
			t.Fatalf("first read = %+v, want one read level", h)
		}
		if h := write(name, 0, 0, 2); h.OK || h.Upgrade {
			t.Fatalf("write after a read given up = %+v, want refused as behind a reader, not as an upgrade", h)
		}
		if h := write(name, 0, -1, 3); h.OK || !h.Upgrade {
			t.Fatalf("write with the read count not sent = %+v, want refused as an upgrade", h)
		}
	})
}
