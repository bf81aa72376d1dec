package hold

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

// A transfer whose release is known to have failed before the waiter
// claims it is not claimed: the waiter attempts instead, and holds
// nothing meanwhile.
func TestClaimOfFailedTransfer(t *testing.T) {
	_, rdb := redistest.Mini(t)
	tk := New(Config{RDB: rdb, Lease: time.Minute})
	now := time.Now()
	tr := &Transfer{To: "w", Mark: "1", at: now, lease: GrantLease, valid: now.Add(10 * time.Second), done: make(chan struct{})}
	tr.finish(false)
	ok, err := tk.ClaimTransfer(context.Background(), Exclusive, tr, 1)
	if ok || err != nil {
		t.Fatalf("ClaimTransfer of a failed transfer = %v, %v; want false, nil", ok, err)
	}
	if tk.Held(Exclusive) != 0 {
		t.Fatal("the handle holds a level after claiming a failed transfer")
	}
}
