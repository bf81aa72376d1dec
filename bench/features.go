package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/script"
)

// The features scenario (issue 43, item 3): where a newer server offers a
// cheaper way to do one of redisync's steps, it runs today's step and the
// newer one on the server the bench started, in turns, several times, and
// reports what the newer one saves beside the run-to-run noise. It is
// opt-in (see optIn): run it with -run features on each server of the
// matrix, e.g. through .ci/servers (see featuresCommand).
func init() { scenarios = append(scenarios, scenario{"features", serverFeatures}) }

// featureRuns is how many times the features scenario runs every variant
// in turns; the table shows the median of the runs and their range.
const featureRuns = 5

// otherReaders is how many other read holds stand beside the measured one
// in the "beside readers" rows: a read release that leaves the lock to
// them reads each one's lease.
const otherReaders = 8

// hfeScripts are the read-write lock's scripts rewritten for hash-field
// expiry (bench/hfe), measured here, not used by the library.
//
//go:embed hfe/*.lua
var hfeScripts embed.FS

func hfeScript(name string) *redis.Script {
	b, err := hfeScripts.ReadFile("hfe/" + name)
	if err != nil {
		panic(err) // embedded: a missing file is a build mistake
	}
	return redis.NewScript(string(b))
}

var (
	hfeReadLock   = hfeScript("rwlock_readlock.lua")
	hfeReadUnlock = hfeScript("rwlock_readunlock.lua")
	hfeRenew      = hfeScript("rwlock_renew.lua")
)

// serverCaps says which of the newer commands the server has.
type serverCaps struct {
	delifeq bool // DELIFEQ key value (Valkey 9.0)
	hfe     bool // HPEXPIRE, HPTTL (Redis 7.4, Valkey 9.0)
	hsetex  bool // HSETEX (Redis 8.0, Valkey 9.0)
	hgetdel bool // HGETDEL (Redis 8.0, Valkey 9.0)
	setIfeq bool // SET key value IFEQ old (Valkey 8.1)
}

// probeCaps asks the server which commands it has (COMMAND INFO), and
// tries SET ... IFEQ, an option and not a command, on a scratch key.
func probeCaps(ctx context.Context, ctl *redis.Client) (serverCaps, error) {
	var c serverCaps
	info, err := ctl.Do(ctx, "command", "info", "delifeq", "hpexpire", "hsetex", "hgetdel").Slice()
	if err != nil {
		return c, err
	}
	has := func(i int) bool { return i < len(info) && info[i] != nil }
	c.delifeq, c.hfe, c.hsetex, c.hgetdel = has(0), has(1), has(2), has(3)
	const scratch = "bench:features:ifeq"
	if err := ctl.Set(ctx, scratch, "a", time.Minute).Err(); err != nil {
		return c, err
	}
	err = ctl.Do(ctx, "set", scratch, "b", "ifeq", "a").Err()
	c.setIfeq = err == nil
	var reply redis.Error
	if err != nil && !errors.As(err, &reply) {
		return c, err
	}
	return c, ctl.Del(ctx, scratch).Err()
}

// featureVariant is one way of doing a step, measured as a locker: Lock
// and Unlock, or a renewal in Lock and nothing in Unlock.
type featureVariant struct {
	step  string // what is done, e.g. "rwlock read Lock+Unlock"
	name  string // how: "today" or the newer command
	today bool   // the library's way, which the others are compared with
	needs func(serverCaps) bool
	// newLocker makes the variant's handle on the lock called key,
	// holding whatever the step needs held first.
	newLocker func(ctx context.Context, rdb *redis.Client, key string) (locker, error)
}

var featureVariants = []featureVariant{
	{step: "compare-and-delete of a SET NX lock", name: "script (GET, DEL)", today: true, needs: hasDelifeq,
		newLocker: func(_ context.Context, rdb *redis.Client, key string) (locker, error) { return newBare(rdb, key), nil }},
	{step: "compare-and-delete of a SET NX lock", name: "DELIFEQ", needs: hasDelifeq, newLocker: newDelifeqLocker},
	{step: "rwlock read Lock+Unlock, alone", name: "timeout keys (today)", today: true, needs: hasHFE, newLocker: readPair(false, 0)},
	{step: "rwlock read Lock+Unlock, alone", name: "field expiry", needs: hasHFE, newLocker: readPair(true, 0)},
	{step: fmt.Sprintf("rwlock read Lock+Unlock, beside %d readers", otherReaders), name: "timeout keys (today)", today: true, needs: hasHFE, newLocker: readPair(false, otherReaders)},
	{step: fmt.Sprintf("rwlock read Lock+Unlock, beside %d readers", otherReaders), name: "field expiry", needs: hasHFE, newLocker: readPair(true, otherReaders)},
	{step: "rwlock read renewal", name: "timeout keys (today)", today: true, needs: hasHFE, newLocker: renewal(false)},
	{step: "rwlock read renewal", name: "field expiry", needs: hasHFE, newLocker: renewal(true)},
}

func hasDelifeq(c serverCaps) bool { return c.delifeq }
func hasHFE(c serverCaps) bool     { return c.hfe }

// delifeqLocker is bareLocker released by DELIFEQ instead of a script.
type delifeqLocker struct{ *bareLocker }

func newDelifeqLocker(_ context.Context, rdb *redis.Client, key string) (locker, error) {
	return delifeqLocker{newBare(rdb, key).(*bareLocker)}, nil
}

func (l delifeqLocker) Unlock(ctx context.Context) error {
	n, err := l.rdb.Do(ctx, "delifeq", l.key, l.token).Int()
	if err == nil && n != 1 {
		err = fmt.Errorf("delifeq: unlock %q: not held", l.key)
	}
	return err
}

// featureLease is the read lease of every hold the features scenario
// takes: the watchdog's default, as a watchdog hold has.
const featureLease = 30 * time.Second

// readHolder takes and releases read holds of one read-write lock, with
// today's scripts or their field-expiry variants.
type readHolder struct {
	rdb   *redis.Client
	keys  script.RWKeys
	hfe   bool
	lease time.Duration // featureLease when 0
}

func (h readHolder) leaseOf() time.Duration {
	if h.lease > 0 {
		return h.lease
	}
	return featureLease
}

func (h readHolder) take(ctx context.Context, id string) error {
	deadline := time.Now().Add(5 * time.Second).UnixMilli()
	if h.hfe {
		keys := []string{h.keys.Lock, h.keys.Writers, h.keys.Readers, h.keys.Turn}
		return wantFirst(hfeReadLock.Run(ctx, h.rdb, keys, id, h.leaseOf().Milliseconds(), "0", 1000, deadline), "read lock")
	}
	res, err := script.RWReadTake(ctx, h.rdb, h.keys, script.RWReadArgs{ID: id, Lease: h.leaseOf(), Patience: time.Second, Deadline: deadline}).Result()
	if err == nil && !res.OK {
		err = errBusy
	}
	return err
}

func (h readHolder) release(ctx context.Context, id string) error {
	if h.hfe {
		keys := []string{h.keys.Lock, h.keys.WriterChannel}
		return wantFirst(hfeReadUnlock.Run(ctx, h.rdb, keys, id, h.leaseOf().Milliseconds(), "0", 0), "read unlock")
	}
	res, err := script.RWReadUnlock(ctx, h.rdb, h.keys, script.ReleaseArgs{ID: id, Lease: h.leaseOf()}).Result()
	if err == nil && !res.OK {
		err = fmt.Errorf("read unlock %q: %+v", id, res)
	}
	return err
}

func (h readHolder) renew(ctx context.Context, id string) error {
	var ok bool
	var err error
	if h.hfe {
		var n int64
		n, err = hfeRenew.Run(ctx, h.rdb, []string{h.keys.Lock}, id, h.leaseOf().Milliseconds()).Int64()
		ok = n == 1
	} else {
		ok, err = script.RWRenew(ctx, h.rdb, h.keys, id, h.leaseOf()).Result()
	}
	if err == nil && !ok {
		err = fmt.Errorf("renew %q: not held", id)
	}
	return err
}

// wantFirst checks that a script's reply is a table whose first element
// is 1.
func wantFirst(cmd *redis.Cmd, what string) error {
	v, err := cmd.Int64Slice()
	if err == nil && (len(v) == 0 || v[0] != 1) {
		err = fmt.Errorf("%s: reply %v", what, v)
	}
	return err
}

// readPair returns the newLocker of a read Lock+Unlock, with others read
// holds of other owners standing beside it.
func readPair(hfe bool, others int) func(context.Context, *redis.Client, string) (locker, error) {
	return func(ctx context.Context, rdb *redis.Client, key string) (locker, error) {
		h := readHolder{rdb: rdb, keys: keyspace.NewNames(key).RWKeys(), hfe: hfe}
		for i := range others {
			if err := h.take(ctx, fmt.Sprintf("other%d:1", i)); err != nil {
				return nil, err
			}
		}
		return readPairLocker{h: h, id: "bench:1"}, nil
	}
}

type readPairLocker struct {
	h  readHolder
	id string
}

func (l readPairLocker) Lock(ctx context.Context) error   { return l.h.take(ctx, l.id) }
func (l readPairLocker) Unlock(ctx context.Context) error { return l.h.release(ctx, l.id) }

// renewal returns the newLocker of a read hold's renewal: its Lock renews
// a hold taken first, its Unlock does nothing.
func renewal(hfe bool) func(context.Context, *redis.Client, string) (locker, error) {
	return func(ctx context.Context, rdb *redis.Client, key string) (locker, error) {
		h := readHolder{rdb: rdb, keys: keyspace.NewNames(key).RWKeys(), hfe: hfe}
		l := renewLocker{h: h, id: "bench:1"}
		return l, h.take(ctx, l.id)
	}
}

type renewLocker struct {
	h  readHolder
	id string
}

func (l renewLocker) Lock(ctx context.Context) error { return l.h.renew(ctx, l.id) }
func (renewLocker) Unlock(context.Context) error     { return nil }

// serverFeatures is the features scenario: every variant the server has
// a command for, in turns as in scenario 1, featureRuns times over.
func serverFeatures(ctx context.Context, e *env) (*table, error) {
	info, err := e.ctl.Info(ctx, "server").Result()
	if err != nil {
		return nil, err
	}
	server := serverVersion(info)
	caps, err := probeCaps(ctx, e.ctl)
	if err != nil {
		return nil, err
	}
	var vs []featureVariant
	for _, v := range featureVariants {
		if v.needs(caps) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		tb := newTable("Server features on "+server, "newer command", "on this server")
		for _, c := range caps.list() {
			tb.add(c[0], c[1])
		}
		tb.note("None of the commands measured (DELIFEQ, HPEXPIRE/HPTTL) is here: nothing to measure.")
		return tb, nil
	}
	tb := newTable("Server features on "+server,
		"step", "variant", "Redis commands/op", "server µs/op", "runs' range", "saved µs/op", "saved: runs' range", "ns/op")
	if err := measureVariants(ctx, e, vs, tb); err != nil {
		return nil, err
	}
	tb.note("Commands on this server: %s.", caps.describe())
	tb.note("%d runs; in each, every variant runs in turns of %d ops for about %v (as scenario 1), and server µs/op is the median of its bursts (commandstats usec, each command once). "+
		"The table shows the median of the runs' medians and their range; saved is today's variant minus this one within each run (the same load fell on both), median and range over the runs. "+
		"An op is the step named: a Lock+Unlock, or one renewal. The read holds have a %v lease; the %d other readers hold for the whole run.",
		e.cfg.featureRuns, burst, e.cfg.uncontended, featureLease, otherReaders)
	return tb, nil
}

// measureVariants runs vs in turns e.cfg.featureRuns times and adds a row
// per variant to tb.
func measureVariants(ctx context.Context, e *env, vs []featureVariant, tb *table) error {
	rdb, cnt := e.client()
	usec := make([][]float64, len(vs))
	ns := make([][]float64, len(vs))
	cmds := make([]float64, len(vs))
	for run := range e.cfg.featureRuns {
		lockers := make([]locker, len(vs))
		totals := make([]uncontendedTotal, len(vs))
		for i, v := range vs {
			l, err := v.newLocker(ctx, rdb, fmt.Sprintf("bench:features:%d:%d", run, i))
			if err != nil {
				return fmt.Errorf("%s, %s: %w", v.step, v.name, err)
			}
			if _, err := lockUnlock(ctx, l, 100); err != nil {
				return fmt.Errorf("%s, %s: %w", v.step, v.name, err)
			}
			if run == 0 {
				if err := totals[i].count(ctx, e, l, cnt); err != nil {
					return err
				}
				cmds[i] = totals[i].cmds
			}
			lockers[i] = l
		}
		if err := takeTurns(ctx, e, lockers, totals, e.cfg.uncontended, cnt, nil); err != nil {
			return err
		}
		for i := range vs {
			usec[i] = append(usec[i], totals[i].usec())
			ns[i] = append(ns[i], totals[i].ns())
		}
		if err := e.ctl.FlushAll(ctx).Err(); err != nil {
			return err
		}
	}
	base := map[string]int{} // step -> index of its today variant
	for i, v := range vs {
		if v.today {
			base[v.step] = i
		}
	}
	for i, v := range vs {
		saved, savedRange := "-", "-"
		if b, ok := base[v.step]; ok && !v.today {
			d := make([]float64, len(usec[i]))
			for r := range d {
				d[r] = usec[b][r] - usec[i][r]
			}
			saved = fmt.Sprintf("%.1f (%.0f%%)", median(d), 100*median(d)/median(usec[b]))
			savedRange = spread(d)
		}
		tb.add(v.step, v.name, num(cmds[i]), usecs(median(usec[i])), spread(usec[i]), saved, savedRange, num(median(ns[i])))
	}
	return nil
}

// spread formats the range of v: "min to max".
func spread(v []float64) string {
	return fmt.Sprintf("%.1f to %.1f", slices.Min(v), slices.Max(v))
}

// list names the newer commands and whether the server has each.
func (c serverCaps) list() [][2]string {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	return [][2]string{
		{"DELIFEQ", yes(c.delifeq)},
		{"HPEXPIRE/HPTTL", yes(c.hfe)},
		{"HSETEX", yes(c.hsetex)},
		{"HGETDEL", yes(c.hgetdel)},
		{"SET ... IFEQ", yes(c.setIfeq)},
	}
}

// describe lists the newer commands and whether the server has each.
func (c serverCaps) describe() string {
	var s []string
	for _, c := range c.list() {
		s = append(s, c[0]+" "+c[1])
	}
	return strings.Join(s, ", ")
}
