package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// An event is one line of a client's history: the invocation or the
// completion of an operation, as Jepsen records them. Times are wall-clock
// nanoseconds (every process runs on the same machine and reads the same
// CLOCK_REALTIME; the harness never moves the clients' clock).
type event struct {
	Client int    `json:"c"`
	Inst   int    `json:"i"`             // the client's process instance: 1, then 2 after a kill...
	Op     string `json:"op"`            // see the op* constants
	Type   string `json:"type"`          // see the type* constants
	T      int64  `json:"t"`             // unix nanoseconds
	Tok    string `json:"tok,omitempty"` // fencing tokens "server:token,..."; empty when unfenced
	Val    int64  `json:"v,omitempty"`   // a read's value, a write's new value
	Mode   string `json:"m,omitempty"`   // acquire: "w" exclusive, "r" shared, "p" a permit
	Err    string `json:"err,omitempty"`
}

// Operations of a client's history.
const (
	opAcquire = "acquire"
	opRelease = "release"
	opLost    = "lost"  // the handle's Done closed before the client released
	opRead    = "read"  // of the fenced register
	opWrite   = "write" // of the fenced register
	opEnter   = "enter" // of the counted resource (semaphore)
	opExit    = "exit"
)

// Types of an event.
const (
	typeInvoke = "invoke"
	typeOK     = "ok"
	typeFail   = "fail" // the operation did not happen (refused, or an error that says so)
	typeInfo   = "info" // the outcome is unknown
)

// A recorder appends events to a client's history file, one JSON line per
// write(2), so a client killed with SIGKILL leaves every event it recorded.
type recorder struct {
	client, inst int
	mu           sync.Mutex // serializes writes to f
	f            *os.File
}

func newRecorder(path string, client, inst int) (*recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &recorder{client: client, inst: inst, f: f}, nil
}

// record writes e with the recorder's client and instance and the current
// time, and returns that time.
func (r *recorder) record(e event) int64 {
	e.Client, e.Inst = r.client, r.inst
	r.mu.Lock()
	defer r.mu.Unlock()
	e.T = time.Now().UnixNano()
	b, _ := json.Marshal(e)
	_, _ = r.f.Write(append(b, '\n'))
	return e.T
}

func (r *recorder) close() error { return r.f.Close() }

// readLines reads a file of JSON lines: a history or the resource's log.
// A line that does not decode (the last one, cut short by a kill) is
// skipped.
func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var v T
		if json.Unmarshal(sc.Bytes(), &v) == nil {
			out = append(out, v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
