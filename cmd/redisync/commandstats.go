package main

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// notCounted are commands that are not the primitives' work: the
// measurement itself and connection handshakes.
var notCounted = map[string]bool{"info": true, "hello": true, "auth": true, "select": true, "client|setinfo": true, "client|setname": true}

// calls counts the commands a server ran: all of them, the commands run
// inside scripts included, and the script calls among them.
type calls struct {
	all, scripts int64
}

// isScript tells the commands that run a script.
var isScript = map[string]bool{"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true, "fcall": true, "fcall_ro": true}

// commandCalls returns how many commands the server has run, summed over
// every master, from INFO commandstats. ok is false when the server does
// not report them (miniredis).
func commandCalls(ctx context.Context, rdb redis.UniversalClient) (total calls, ok bool) {
	var mu sync.Mutex // protects total, seen
	seen := false
	err := forEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		info, err := node.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		n, found := sumCalls(info)
		mu.Lock()
		total.all += n.all
		total.scripts += n.scripts
		seen = seen || found
		mu.Unlock()
		return nil
	})
	return total, err == nil && seen
}

// sumCalls adds up the calls= of the cmdstat_ lines of an INFO reply.
func sumCalls(info string) (calls, bool) {
	var total calls
	found := false
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		cmd, isStat := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isStat {
			continue
		}
		found = true
		if notCounted[cmd] {
			continue
		}
		for _, field := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total.all += n
				if isScript[cmd] {
					total.scripts += n
				}
			}
		}
	}
	return total, found
}
