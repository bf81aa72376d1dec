package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress shows how a timed run is going on one line of a terminal,
// rewritten in place, or as a plain line every second elsewhere (a log,
// a pipe).
type progress struct {
	w     io.Writer
	tty   bool
	label string
	total time.Duration
	ops   func() int64 // operations so far
	began time.Time
	stop  chan struct{}
	done  chan struct{}
}

// startProgress starts showing the progress of a run of total length; the
// caller must call finish.
func startProgress(w io.Writer, label string, total time.Duration, ops func() int64) *progress {
	p := &progress{w: w, tty: isTerminal(w), label: label, total: total, ops: ops,
		began: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	every := time.Second
	if p.tty {
		every = 200 * time.Millisecond
	}
	go p.loop(every)
	return p
}

func (p *progress) loop(every time.Duration) {
	defer close(p.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			if p.tty {
				fmt.Fprint(p.w, "\r\x1b[K") // leave the line empty for the table
			}
			return
		case <-tick.C:
			p.show()
		}
	}
}

func (p *progress) show() {
	elapsed := time.Since(p.began)
	ops := p.ops()
	line := fmt.Sprintf("%s  %s/%s  %d ops  %s ops/s", p.label,
		fmtDuration(elapsed.Round(100*time.Millisecond)), fmtDuration(p.total), ops, perSecond(ops, elapsed))
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	const width = 20
	done := min(int(width*elapsed/max(p.total, 1)), width)
	bar := strings.Repeat("=", done) + strings.Repeat(" ", width-done)
	fmt.Fprintf(p.w, "\r\x1b[K[%s] %s", bar, line)
}

// finish stops the display and waits for it.
func (p *progress) finish() {
	close(p.stop)
	<-p.done
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
