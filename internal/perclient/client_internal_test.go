package perclient

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

func registered(rdb redis.UniversalClient) *Client {
	registryMu.Lock()
	defer registryMu.Unlock()
	return registry[rdb]
}

// The registry keeps an idle Client for clientLinger, so back-to-back
// holds share it, then forgets it.
func TestClientLingers(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	c := Attach(rdb)
	c.Detach()
	if again := Attach(rdb); again != c {
		t.Fatal("a Client released a moment ago was built anew")
	} else {
		again.Detach()
	}
	deadline := time.Now().Add(clientLinger + 2*time.Second)
	for registered(rdb) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the registry still holds an idle Client %v after its release", clientLinger+2*time.Second)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
