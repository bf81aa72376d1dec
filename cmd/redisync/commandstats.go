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
// inside scripts included, and the script calls among them; and, by name,
// their calls and the microseconds Redis spent in them.
type calls struct {
	all, scripts int64
	names        map[string]cmdStat
}

// cmdStat is one command's calls= and usec= in INFO commandstats.
type cmdStat struct{ calls, usec int64 }

// since returns what the server ran between before and c.
func (c calls) since(before calls) calls {
	d := calls{all: c.all - before.all, scripts: c.scripts - before.scripts, names: make(map[string]cmdStat)}
	for name, s := range c.names {
		b := before.names[name]
		if s.calls > b.calls {
			d.names[name] = cmdStat{s.calls - b.calls, s.usec - b.usec}
		}
	}
	return d
}

// serverUsec returns the microseconds Redis spent running the commands
// of c (a since), each once: a script's time includes that of the
// commands it called, which commandstats counts on their own too. sent
// counts the commands the clients sent themselves, by name; a command
// also run inside scripts counts for the share of its calls they sent.
func (c calls) serverUsec(sent map[string]int64) float64 {
	var usec float64
	for name, s := range c.names {
		if isScript[name] {
			usec += float64(s.usec)
		} else {
			usec += float64(s.usec) * min(1, float64(sent[name])/float64(s.calls))
		}
	}
	return usec
}

// sentCounter is a go-redis hook that counts the commands a client sends,
// by name.
type sentCounter struct {
	mu sync.Mutex // protects n
	n  map[string]int64
}

func (h *sentCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sentCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd)
		return next(ctx, cmd)
	}
}

func (h *sentCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.add(cmd)
		}
		return next(ctx, cmds)
	}
}

func (h *sentCounter) add(cmd redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = make(map[string]int64)
	}
	h.n[strings.ToLower(cmd.Name())]++
}

// take returns the counts so far and starts again from zero.
func (h *sentCounter) take() map[string]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.n
	h.n = nil
	return n
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
		if total.names == nil {
			total.names = make(map[string]cmdStat)
		}
		for name, s := range n.names {
			t := total.names[name]
			total.names[name] = cmdStat{t.calls + s.calls, t.usec + s.usec}
		}
		seen = seen || found
		mu.Unlock()
		return nil
	})
	return total, err == nil && seen
}

// sumCalls adds up the calls= of the cmdstat_ lines of an INFO reply.
func sumCalls(info string) (calls, bool) {
	total := calls{names: make(map[string]cmdStat)}
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
		var st cmdStat
		for _, field := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				st.calls, _ = strconv.ParseInt(v, 10, 64)
			}
			if v, ok := strings.CutPrefix(field, "usec="); ok {
				st.usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		total.all += st.calls
		if isScript[cmd] {
			total.scripts += st.calls
		}
		total.names[cmd] = st
	}
	return total, found
}
