package redisyncotel_test

import (
	"testing"

	"github.com/redisync/redisync/internal/redistest"
)

// The tests run on a real redis-server, started by redistest (the nested
// module reaches the parent's internal packages by Go's path rule), with
// its goroutine-leak check.
func TestMain(m *testing.M) { redistest.Main(m) }
