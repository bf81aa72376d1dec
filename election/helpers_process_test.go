package election_test

import "github.com/redisync/redisync/internal/redistest"

// helpers are the processes the tests start (see redistest.StartHelper).
var helpers = map[string]redistest.HelperFunc{}
