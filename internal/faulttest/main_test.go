package faulttest_test

import (
	"testing"

	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.HelperMain(m, map[string]redistest.HelperFunc{
		"hold":  helperHold,
		"churn": helperChurn,
		"wait":  helperWait,
	})
}
