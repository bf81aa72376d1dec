package faulttest_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/redisync/redisync/internal/redistest"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The fault tier waits for leases to run out, servers to restart and
	// replicas to take over: about five minutes. The quick tier (-short)
	// leaves all of it to the full run; helper processes never run tests.
	if testing.Short() && os.Getenv(redistest.HelperEnv) == "" {
		fmt.Println("faulttest: the fault tier is skipped under -short (the quick tier); the full run includes it")
		os.Exit(0)
	}
	redistest.HelperMain(m, map[string]redistest.HelperFunc{
		"hold":   helperHold,
		"churn":  helperChurn,
		"wait":   helperWait,
		"giveup": helperGiveUp,
	})
}
