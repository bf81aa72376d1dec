package nopubsub_test

import (
	"testing"

	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.HelperMain(m, map[string]redistest.HelperFunc{"contend": contendProcess})
}
