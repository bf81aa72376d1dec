package keyslot_test

import (
	"go.uber.org/goleak"

	"testing"

	"github.com/redisync/redisync/internal/keyslot"
)

func TestSlot(t *testing.T) {
	// Reference values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{
		"123456789":              12739,
		"foo":                    12182,
		"{user1000}.following":   keyslot.Of("user1000"),
		"foo{}{bar}":             keyslot.Of("foo{}{bar}"),
		"redisync:{orders}:chan": keyslot.Of("orders"),
	} {
		if got := keyslot.Of(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
