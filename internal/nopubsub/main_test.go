package nopubsub_test

import (
	"testing"

	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
