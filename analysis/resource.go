package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The fenced resource is the thing the locks protect: a register the
// clients read, increment and write back inside their critical section,
// and a count of the holders inside it (for the semaphore, whose holds
// carry no token). It is the lock-protected resource of Jepsen's etcd
// analysis and Kleppmann's fencing argument: it remembers, per lock
// server, the highest fencing token it has accepted and refuses any read
// or write that carries a lower one (or the same one from someone else),
// so a holder whose lease ran out while it was paused or cut off cannot
// overwrite the work of the holder after it. Reads are fenced as well as
// writes: a holder that read with token 5 loses its write once a holder
// with token 6 has read, so no update is lost between a read and a write.
// Operations without tokens (an unfenced lock) are always accepted.
//
// The wire protocol is one line per request and one per reply:
//
//	R who tokens        -> OK value | STALE
//	W who tokens value  -> OK | STALE
//	E who / X who       -> OK inside (enter, exit; inside = holders inside after)
//	G who               -> OK inside (who is gone: killed by the harness)
//	H                   -> OK who | OK -   (the holder most likely inside now)
//
// who names a client process ("c2.1": client 2, instance 1).

// A resEntry is one line of the resource's log: every request it accepted
// or refused, in the order it decided them.
type resEntry struct {
	T      int64  `json:"t"`
	Who    string `json:"who"`
	Op     string `json:"op"` // R, W, E, X, G
	Tok    string `json:"tok,omitempty"`
	OK     bool   `json:"ok"`
	Val    int64  `json:"v"`            // R: the value read; W: the value written
	Prev   int64  `json:"prev"`         // W: the register's value before the write
	Inside int    `json:"in,omitempty"` // E, X, G: holders inside after
}

// register is the resource's state.
type register struct {
	mu     sync.Mutex // protects every field below, and the order of log lines
	value  int64
	hi     map[int]uint64 // highest token accepted, by lock server
	hiBy   map[int]string // who carried it
	reader string         // the last reader whose write has not come
	inside map[string]int64
	log    io.Writer
}

func newRegister(log io.Writer) *register {
	return &register{hi: map[int]uint64{}, hiBy: map[int]string{}, inside: map[string]int64{}, log: log}
}

// fresh reports whether t may act: on every server no lower than the
// highest token accepted, and not equal to it unless who carried it.
func (r *register) fresh(who string, t tokens) bool {
	for s, v := range t {
		h := r.hi[s]
		if v < h || (v == h && r.hiBy[s] != who) {
			return false
		}
	}
	return true
}

func (r *register) raise(who string, t tokens) {
	for s, v := range t {
		r.hi[s], r.hiBy[s] = v, who
	}
}

func (r *register) logLocked(e resEntry) {
	e.T = time.Now().UnixNano()
	b, _ := json.Marshal(e)
	_, _ = r.log.Write(append(b, '\n'))
}

func (r *register) read(who string, t tokens) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := r.fresh(who, t)
	if ok {
		r.raise(who, t)
		r.reader = who
	}
	r.logLocked(resEntry{Who: who, Op: "R", Tok: t.String(), OK: ok, Val: r.value})
	return r.value, ok
}

func (r *register) write(who string, t tokens, v int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := r.fresh(who, t)
	prev := r.value
	if ok {
		r.raise(who, t)
		r.value = v
		if r.reader == who {
			r.reader = ""
		}
	}
	r.logLocked(resEntry{Who: who, Op: "W", Tok: t.String(), OK: ok, Val: v, Prev: prev})
	return ok
}

// count records who entering ("E"), exiting ("X") or gone ("G").
func (r *register) count(op, who string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if op == "E" {
		r.inside[who] = time.Now().UnixNano()
	} else {
		delete(r.inside, who)
	}
	if op == "G" && r.reader == who {
		r.reader = ""
	}
	r.logLocked(resEntry{Who: who, Op: op, OK: true, Inside: len(r.inside)})
	return len(r.inside)
}

// holder names the client most likely in its critical section now: the
// last reader that has not written yet, else the holder that
// entered last, else "-". The nemesis pauses, cuts off or kills it.
func (r *register) holder() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reader != "" {
		return r.reader
	}
	best, at := "-", int64(0)
	for who, t := range r.inside {
		if t > at {
			best, at = who, t
		}
	}
	return best
}

// handle answers one request line.
func (r *register) handle(line string) string {
	f := strings.Fields(line)
	if len(f) == 0 {
		return "ERR empty request"
	}
	switch {
	case f[0] == "H" && len(f) == 1:
		return "OK " + r.holder()
	case (f[0] == "E" || f[0] == "X" || f[0] == "G") && len(f) == 2:
		return fmt.Sprintf("OK %d", r.count(f[0], f[1]))
	case f[0] == "R" && len(f) == 3:
		t, err := parseTokens(f[2])
		if err != nil {
			return "ERR " + err.Error()
		}
		if v, ok := r.read(f[1], t); ok {
			return fmt.Sprintf("OK %d", v)
		}
		return "STALE"
	case f[0] == "W" && len(f) == 4:
		t, err := parseTokens(f[2])
		if err != nil {
			return "ERR " + err.Error()
		}
		v, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return "ERR bad value"
		}
		if r.write(f[1], t, v) {
			return "OK"
		}
		return "STALE"
	}
	return fmt.Sprintf("ERR unknown request %q", line)
}

// serve answers requests on ln until it is closed.
func (r *register) serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				if _, err := io.WriteString(c, r.handle(sc.Text())+"\n"); err != nil {
					return
				}
			}
		}()
	}
}
