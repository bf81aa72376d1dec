package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// A worker is one client process: it loops take the lock, read-modify-write
// the fenced resource (or enter and exit the counted resource), release,
// and records each step in its history.
type worker struct {
	l       locker
	res     *resClient
	rec     *recorder
	who     string
	work    time.Duration // the critical section's length, on average
	timeout time.Duration // bound of one acquisition
}

// runClient is the client mode: `analysis client -primitive P ...`, run by
// the harness inside the client's network namespace.
func runClient(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	var (
		c                   lockerConfig
		id, inst            int
		redisAddrs, resAddr string
		sentinelAddr        string
		history             string
		until               int64
		work                time.Duration
	)
	fs.StringVar(&c.primitive, "primitive", "rlock", "the primitive under test")
	fs.StringVar(&c.name, "name", "analysis", "the lock's name")
	fs.DurationVar(&c.lease, "lease", time.Second, "watchdog timeout of every hold")
	fs.BoolVar(&c.reader, "reader", false, "rwlock: take read holds")
	fs.IntVar(&id, "id", 1, "client number")
	fs.IntVar(&inst, "inst", 1, "process instance of the client")
	fs.StringVar(&redisAddrs, "redis", "", "comma-separated redis-server addresses")
	fs.StringVar(&resAddr, "resource", "", "the fenced resource's address")
	fs.StringVar(&sentinelAddr, "sentinel", "", "reach the first server's primary through this Sentinel")
	fs.StringVar(&history, "history", "", "history file to append to")
	fs.Int64Var(&until, "until", 0, "stop at this time (unix nanoseconds)")
	fs.DurationVar(&work, "work", 20*time.Millisecond, "average length of a critical section")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for i, addr := range strings.Split(redisAddrs, ",") {
		if i == 0 && sentinelAddr != "" {
			c.rdbs = append(c.rdbs, redis.NewFailoverClient(&redis.FailoverOptions{
				MasterName: masterName, SentinelAddrs: []string{sentinelAddr},
				DialTimeout: 300 * time.Millisecond, ReadTimeout: lateAfter, WriteTimeout: lateAfter,
				ContextTimeoutEnabled: true,
			}))
			continue
		}
		c.rdbs = append(c.rdbs, redis.NewClient(&redis.Options{
			Addr: addr, DialTimeout: 300 * time.Millisecond,
			ReadTimeout: lateAfter, WriteTimeout: lateAfter,
			ContextTimeoutEnabled: true,
		}))
	}
	l, err := newLocker(c)
	if err != nil {
		return err
	}
	rec, err := newRecorder(history, id, inst)
	if err != nil {
		return err
	}
	defer rec.close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithDeadline(ctx, time.Unix(0, until))
	defer cancel()
	w := &worker{l: l, res: newResClient(resAddr, time.Second), rec: rec,
		who: fmt.Sprintf("c%d.%d", id, inst), work: work, timeout: 3 * c.lease}
	for ctx.Err() == nil {
		w.once(ctx)
		sleep(ctx, jitter(w.work/2))
	}
	for _, rdb := range c.rdbs {
		_ = rdb.Close()
	}
	return nil
}

// once takes the lock, runs the critical section and releases.
func (w *worker) once(ctx context.Context) {
	actx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	w.rec.record(event{Op: opAcquire, Type: typeInvoke, Mode: w.l.mode()})
	if err := w.l.acquire(actx); err != nil {
		w.rec.record(event{Op: opAcquire, Type: typeFail, Mode: w.l.mode(), Err: err.Error()})
		return
	}
	tok := w.l.tokens()
	w.rec.record(event{Op: opAcquire, Type: typeOK, Mode: w.l.mode(), Tok: tokString(tok)})
	var releasing, lost atomic.Bool
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() { // records the hold's end when the library reports it lost
		defer close(watched)
		select {
		case <-w.l.done():
			if !releasing.Load() {
				lost.Store(true)
				w.rec.record(event{Op: opLost, Type: typeOK})
			}
		case <-stop:
		}
	}()
	w.section(ctx, tok, &lost)
	releasing.Store(true)
	w.release(ctx)
	close(stop)
	<-watched
}

func (w *worker) release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
	defer cancel()
	w.rec.record(event{Op: opRelease, Type: typeInvoke})
	if err := w.l.release(rctx); err != nil {
		w.rec.record(event{Op: opRelease, Type: typeFail, Err: err.Error()})
		return
	}
	w.rec.record(event{Op: opRelease, Type: typeOK})
}

// section is the critical section. A careful client: it checks that the
// hold was not reported lost before each step, and still a pause or a cut
// between the check and the step can make it act on a lost hold.
func (w *worker) section(ctx context.Context, tok tokens, lost *atomic.Bool) {
	work := jitter(w.work)
	if rand.IntN(8) == 0 { // a long one now and then: 10 times as long
		work *= 10
	}
	if w.l.mode() == "p" {
		w.count(opEnter, "E")
		sleep(ctx, work)
		w.count(opExit, "X")
		return
	}
	if lost.Load() {
		return
	}
	v, ok := w.read(tok)
	sleep(ctx, work)
	if !ok || w.l.mode() != "w" || lost.Load() {
		return
	}
	w.write(tok, v+1)
}

func (w *worker) read(tok tokens) (int64, bool) {
	w.rec.record(event{Op: opRead, Type: typeInvoke, Tok: tokString(tok)})
	v, err := w.res.read(w.who, tok)
	w.rec.record(resultEvent(opRead, err, v))
	return v, err == nil
}

func (w *worker) write(tok tokens, v int64) {
	w.rec.record(event{Op: opWrite, Type: typeInvoke, Tok: tokString(tok), Val: v})
	err := w.res.write(w.who, tok, v)
	w.rec.record(resultEvent(opWrite, err, v))
}

func (w *worker) count(op, req string) {
	w.rec.record(event{Op: op, Type: typeInvoke})
	n, err := w.res.count(req, w.who)
	w.rec.record(resultEvent(op, err, int64(n)))
}

// resultEvent is the completion of a resource operation: ok, fail when the
// resource refused it, info when its outcome is unknown.
func resultEvent(op string, err error, v int64) event {
	switch {
	case err == nil:
		return event{Op: op, Type: typeOK, Val: v}
	case errors.Is(err, errStale):
		return event{Op: op, Type: typeFail, Val: v, Err: err.Error()}
	}
	return event{Op: op, Type: typeInfo, Val: v, Err: err.Error()}
}

// tokString is the history's form of t: empty when unfenced.
func tokString(t tokens) string {
	if len(t) == 0 {
		return ""
	}
	return t.String()
}

// jitter is a random duration between d/2 and 3d/2.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d)
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// runResource is the resource mode: `analysis resource -listen A -log F`.
func runResource(args []string) error {
	fs := flag.NewFlagSet("resource", flag.ContinueOnError)
	listen := fs.String("listen", "", "address to listen on")
	logPath := fs.String("log", "", "log file of every request decided")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() { <-ctx.Done(); _ = ln.Close() }()
	err = newRegister(f).serve(ln) // returns when ln is closed
	if ctx.Err() != nil {
		return nil
	}
	return err
}
