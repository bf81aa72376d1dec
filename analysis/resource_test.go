package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestTokens(t *testing.T) {
	tok, err := parseTokens("2:19,0:17")
	if err != nil || tok.String() != "0:17,2:19" {
		t.Fatalf("parseTokens = %v, %v; want 0:17,2:19", tok, err)
	}
	if none, _ := parseTokens("-"); len(none) != 0 || none.String() != "-" {
		t.Fatalf(`parseTokens("-") = %v`, none)
	}
	for _, bad := range []string{"0", "x:1", "0:0", "0:-1", "-1:3"} {
		if _, err := parseTokens(bad); err == nil {
			t.Errorf("parseTokens(%q): no error", bad)
		}
	}
	cases := []struct {
		t, u string
		want bool
	}{
		{"0:5", "0:4", true}, {"0:5", "0:5", false}, {"0:5", "0:6", false},
		{"0:5,1:9", "1:8,2:100", true}, // only shared servers count
		{"0:5,1:9", "0:4,1:10", false}, {"0:5", "1:9", true}, {"0:5", "-", true},
	}
	for _, c := range cases {
		a, _ := parseTokens(c.t)
		b, _ := parseTokens(c.u)
		if got := a.above(b); got != c.want {
			t.Errorf("%s above %s = %v, want %v", c.t, c.u, got, c.want)
		}
	}
}

// TestRegisterRefusesStale plays the paused holder: A reads with token 5,
// B takes over with 6 and reads; A's write is refused, B's is accepted,
// and the log replays with no data violation.
func TestRegisterRefusesStale(t *testing.T) {
	var log bytes.Buffer
	r := newRegister(&log)
	steps := []struct{ req, want string }{
		{"R a 0:5", "OK 0"},
		{"R b 0:6", "OK 0"},
		{"W a 0:5 1", "STALE"}, // a's lease ran out while it was paused
		{"R a 0:5", "STALE"},
		{"W b 0:6 1", "OK"},
		{"R c 0:6", "STALE"}, // the same token from someone else
		{"R c 0:7,1:3", "OK 1"},
		{"W c 1:2 2", "STALE"}, // below on server 1
		{"W c 0:7,1:3 2", "OK"},
		{"R d -", "OK 2"}, // unfenced reads are always served
		{"H", "OK d"},
		{"E p", "OK 1"}, {"E q", "OK 2"}, {"X p", "OK 1"}, {"G q", "OK 0"},
		{"W b", `ERR unknown request "W b"`},
	}
	for _, s := range steps {
		if got := r.handle(s.req); got != s.want {
			t.Fatalf("%q -> %q, want %q", s.req, got, s.want)
		}
	}
	entries := decodeLog(t, log.String())
	d := replay(entries, 2)
	if d.dataViolations() != 0 || d.writesOK != 2 || d.writesRefused != 2 || d.readsRefused != 2 || d.readsOK != 4 {
		t.Fatalf("replay = %+v", d)
	}
}

func decodeLog(t *testing.T, s string) []resEntry {
	t.Helper()
	var entries []resEntry
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		var e resEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		entries = append(entries, e)
	}
	return entries
}

// TestReplayFindsDataViolations: without tokens two holders' writes both
// go through and one increment is lost; a resource that accepted a stale
// token, or more holders than permits, shows too.
func TestReplayFindsDataViolations(t *testing.T) {
	var log bytes.Buffer
	r := newRegister(&log)
	for _, req := range []string{"R a -", "R b -", "W a - 1", "W b - 1", "E p", "E q", "E s"} {
		r.handle(req)
	}
	entries := decodeLog(t, log.String())
	entries = append(entries,
		resEntry{Who: "x", Op: "R", Tok: "0:9", OK: true},
		resEntry{Who: "y", Op: "W", Tok: "0:8", OK: true, Val: 2, Prev: 1})
	d := replay(entries, 2)
	if d.lostUpdates != 1 || d.staleAccepted != 1 || d.overCapacity != 1 || d.maxInside != 3 || d.dataViolations() != 3 {
		t.Fatalf("replay = %+v", d)
	}
}

// TestResourceOverTCP runs the server and the client on loopback.
func TestResourceOverTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	reg := newRegister(&log)
	done := make(chan struct{})
	go func() { defer close(done); _ = reg.serve(ln) }()
	defer func() { _ = ln.Close(); <-done }()
	c := newResClient(ln.Addr().String(), time.Second)
	defer c.close()
	if v, err := c.read("c1.1", tokens{0: 10}); err != nil || v != 0 {
		t.Fatalf("read = %d, %v", v, err)
	}
	if err := c.write("c2.1", tokens{0: 9}, 1); !errors.Is(err, errStale) {
		t.Fatalf("stale write: %v, want errStale", err)
	}
	if err := c.write("c1.1", tokens{0: 10}, 1); err != nil {
		t.Fatalf("write: %v", err)
	}
	if n, err := c.count("E", "c3.1"); err != nil || n != 1 {
		t.Fatalf("enter = %d, %v", n, err)
	}
	if who, err := c.holder(); err != nil || who != "c3.1" {
		t.Fatalf("holder = %q, %v", who, err)
	}
}
