package main

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// TestLateProxy: what a client sends on a stalled connection reaches the
// server only when the stall ends, in order, even when the client has
// closed the connection meanwhile; a connection opened after the stall
// is not held; every late chunk is recorded.
func TestLateProxy(t *testing.T) {
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	type line struct {
		text string
		at   time.Time
	}
	got := make(chan line, 16)
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					got <- line{sc.Text(), time.Now()}
				}
			}()
		}
	}()
	recorded := make(chan string, 16)
	p, err := newLateProxy("127.0.0.1:0", srv.Addr().String(), func(late time.Duration, b []byte) {
		recorded <- strings.TrimSpace(string(b))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	c1, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	write := func(c net.Conn, s string) {
		if _, err := c.Write([]byte(s + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	write(c1, "before")
	if l := <-got; l.text != "before" {
		t.Fatalf("got %q, want before", l.text)
	}
	const hold = 800 * time.Millisecond
	p.stall(hold)
	stalled := time.Now()
	write(c1, "held")
	time.Sleep(50 * time.Millisecond)
	_ = c1.Close() // the client gives up

	c2, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	write(c2, "fresh")
	if l := <-got; l.text != "fresh" || l.at.Sub(stalled) > hold/2 {
		t.Fatalf("got %q after %v, want fresh at once", l.text, l.at.Sub(stalled))
	}
	if l := <-got; l.text != "held" || l.at.Sub(stalled) < hold-50*time.Millisecond {
		t.Fatalf("got %q after %v, want held after %v", l.text, l.at.Sub(stalled), hold)
	}
	if r := <-recorded; r != "held" || len(recorded) != 0 || p.late.Load() != 1 {
		t.Fatalf("recorded %q (and %d more), late = %d", r, len(recorded), p.late.Load())
	}
}
