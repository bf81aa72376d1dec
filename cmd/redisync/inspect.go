package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/errs"

	"github.com/redisync/redisync/internal/keyspace"
)

const inspectAbout = `
Shows what each named lock, semaphore, latch or election is in Redis: its
kind, holders and hold counts (each hold id, an owner id and a number
of its own, names the host and pid of its process, shown after it), TTL, the fair lock's queue with deadlines,
the read-write lock's mode and readers, the semaphore's permits, the
latch's count, the election's leader, value, term and candidates, the
current hold's fencing token and the fencing counter, and how
many clients are subscribed waiting for it. Keys it cannot explain are listed raw.
NAME is the name given to New in the code ("orders:42"), not a Redis key;
given one of redisync's keys ("redisync:{orders:42}:queue"), it says the
name the key belongs to.

It only reads. It finds a name's keys with SCAN on the node holding them,
which walks that node's whole keyspace. A NAME that holds nothing in
Redis is reported as free, and the command then exits with code 3.`

// Kinds of data inspect recognises. A held fair lock with nobody queued
// has the same layout as a reentrant mutex, so it reads as kindMutex.
const (
	kindFree      = "free"      // no keys: nothing under the name (not locked, no permits, no latch)
	kindMutex     = "mutex"     // rlock (waiters in line or not), or a fairlock with an empty queue
	kindFairlock  = "fairlock"  // a fair lock with waiters queued
	kindRWLock    = "rwlock"    // a read-write lock
	kindSemaphore = "semaphore" // a semaphore's permit count
	kindLatch     = "latch"     // a count-down latch
	kindElection  = "election"  // an election: its leader's hold, and candidates in line
	kindUnknown   = "unknown"   // keys of a layout inspect does not know
)

// report is what inspect shows about one name.
type report struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`
	TTLms       *int64   `json:"ttl_ms,omitempty"` // remaining lease; -1: none
	Mode        string   `json:"mode,omitempty"`
	Holders     []holder `json:"holders,omitempty"`
	Queue       []queued `json:"queue,omitempty"`
	Permits     *int64   `json:"permits,omitempty"`  // a semaphore's available permits
	Total       *int64   `json:"total,omitempty"`    // a leased semaphore's permits, acquired ones included
	Leased      bool     `json:"leased,omitempty"`   // a leased semaphore (semaphore.Leased), not a counting one
	Receipts    []string `json:"receipts,omitempty"` // a semaphore's or latch's recent requests, by kind: "acquire", "release", ...
	Count       *int64   `json:"count,omitempty"`    // a latch's count
	Value       *string  `json:"value,omitempty"`    // an election leader's value
	Token       *int64   `json:"token,omitempty"`    // the current (write) hold's fencing token
	Fence       *int64   `json:"fence,omitempty"`    // the fencing counter: the last token handed out
	fenceTTLms  int64    // the counter's expiry
	Subscribers int64    `json:"subscribers"` // subscriptions to the unlock channel and the queued waiters' own
	Keys        []*key   `json:"keys"`
	// Hint, for a NAME with nothing under it that is a redisync key
	// itself ("redisync:{job}:queue"), names the name the key belongs to.
	Hint string `json:"hint,omitempty"`
	note string // shown after the kind in text
}

// holder is one owner id with its hold count, or a leased permit.
type holder struct {
	ID string `json:"id"` // the hold id (a read-write lock's field: "r:" or "w:" and the hold id), or a permit id
	process
	Count int64 `json:"count"`
	// Mark is, for a hold of a version before hold ids, the number of the
	// holder's latest attempt (the "@" field next to its count); omitted
	// for a hold id, which needs none.
	Mark int64 `json:"mark,omitempty"`
	// LeaseMs is what is left of a leased permit's lease.
	LeaseMs *int64 `json:"lease_ms,omitempty"`
}

// process is the process an owner id names: its host name and pid (see
// keyspace.NewOwnerID); empty for an id that names none.
type process struct {
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
}

// processOf reads the process out of owner id id.
func processOf(id string) process {
	o, _ := keyspace.ParseOwner(id)
	return process{Host: o.Host, PID: o.PID}
}

// about describes p for the text output: "  pid 4121 on web-3", or "".
func (p process) about() string {
	if p.PID == 0 {
		return ""
	}
	return fmt.Sprintf("  pid %d on %s", p.PID, p.Host)
}

// queued is one waiter in a mutex's line.
type queued struct {
	ID string `json:"id"`
	process
	DeadlineMs  int64 `json:"deadline_ms"`  // server clock, Unix ms; 0: none
	RemainingMs int64 `json:"remaining_ms"` // until the deadline
	// Lapsed: the waiter's place has expired (it stopped attempting, its
	// process most likely dead), so the lock passes it by; its entry
	// waits for a release to drop it.
	Lapsed bool `json:"lapsed,omitempty"`
	// Value is an election candidate's value.
	Value string `json:"value,omitempty"`
}

// key is one Redis key of the name, raw.
type key struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	TTLms int64  `json:"ttl_ms"` // -1: no expiry
	Value any    `json:"value"`
	// Size is how many members a sorted set has: Value shows at most
	// keyLimit of them, those of the lowest scores.
	Size      int64 `json:"size,omitempty"`
	live      int64 // members of a sorted set scored later than the server's now
	explained bool  // a decoder showed its meaning
}

// keyLimit bounds how many elements of one list, set, zset or hash are read.
// The counts a decoder reports do not depend on it (see key.live).
const keyLimit = 1000

func runInspect(ctx context.Context, out *output, args []string) error {
	fs := newFlagSet(out, "inspect", "inspect [flags] NAME...", inspectAbout)
	conn := addConnFlags(fs, false)
	asJSON := fs.Bool("json", false, "print a JSON array of reports instead of text")
	names, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return usagef("no NAME given")
	}
	for _, n := range names {
		if n == "" {
			return usagef("empty NAME")
		}
	}
	t, err := conn.open(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	rdb := t.client()
	var reports []*report
	for _, n := range names {
		r, err := inspect(ctx, rdb, n)
		if err != nil {
			return fmt.Errorf("inspect %q: %w", n, err)
		}
		reports = append(reports, r)
	}
	return writeReports(out, reports, *asJSON)
}

// writeReports prints reports as text or as a JSON array. When a NAME
// holds nothing in Redis, it says so and ends the command with
// exitNothing.
func writeReports(out *output, reports []*report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			return err
		}
	} else {
		for i, r := range reports {
			if i > 0 {
				fmt.Fprintln(out.stdout)
			}
			r.writeText(out.stdout)
		}
	}
	var nothing []string
	for _, r := range reports {
		if r.Kind == kindFree {
			nothing = append(nothing, strconv.Quote(r.Name))
		}
	}
	if len(nothing) > 0 {
		return &exitStatus{code: exitNothing, msg: "nothing in Redis under " + strings.Join(nothing, ", ") + " (not locked, no permits, no latch: check the name and the server)"}
	}
	return nil
}

// inspect reads everything Redis holds for name and decodes it.
func inspect(ctx context.Context, rdb redis.UniversalClient, name string) (*report, error) {
	return inspectKeys(ctx, rdb, name, nil)
}

// inspectKeys is inspect of name whose keys were found already (by list's
// SCAN): it reads found instead of scanning for them; nil scans.
func inspectKeys(ctx context.Context, rdb redis.UniversalClient, name string, found []string) (*report, error) {
	n := keyspace.NewNames(name)
	node, err := nodeFor(ctx, rdb, n.Lock())
	if err != nil {
		return nil, err
	}
	now, err := node.Time(ctx).Result()
	if err != nil {
		return nil, err
	}
	keys, err := readKeys(ctx, node, n, now, found)
	if err != nil {
		return nil, err
	}
	r := &report{Name: name, Keys: keys}
	byName := make(map[string]*key, len(keys))
	for _, k := range keys {
		byName[k.Key] = k
	}
	if k := byName[n.Fence()]; k != nil && k.Type == "string" {
		if v, ok := parseInt(k.Value); ok {
			r.Fence, r.fenceTTLms, k.explained = &v, k.TTLms, true
		}
	}
	if k := byName[n.Lock()]; k != nil && k.Type == "hash" {
		h, _ := k.Value.(map[string]string)
		if v, ok := parseInt(h[tokenField]); ok {
			r.Token = &v
		}
	}
	r.Kind = kindUnknown
	switch {
	case byName[n.Lock()] == nil && len(keys) == countExplained(keys):
		r.Kind, r.note = kindFree, "nothing in Redis under this name"
		if owner, ok := nameOfKey(name); ok {
			r.Hint = fmt.Sprintf("%q is a Redis key of the name %q: NAME is the name given to New; try: redisync inspect %q", name, owner, owner)
		}
	default:
		for _, decode := range decoders {
			if decode(r, byName, n, now) {
				break
			}
		}
	}
	channels := []string{n.Channel()}
	if r.Kind == kindLatch {
		channels = []string{n.LatchChannel()}
	}
	// Waiters in a line (rlock, fairlock) listen on channels of their own.
	for _, q := range r.Queue {
		channels = append(channels, n.WaiterChannel(q.ID))
	}
	for _, ch := range channels {
		k, err := subscribers(ctx, rdb, node, ch)
		if err != nil {
			return nil, err
		}
		r.Subscribers += k
	}
	return r, nil
}

// nameOfKey returns the name whose keys include key, when key is one of
// redisync's: "redisync:{job}" and "redisync:{job}:queue" are keys of
// "job". A name may hold '}': the name is the shortest that makes key its
// main key or one of the keys under it.
func nameOfKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, keyspace.Prefix+"{")
	if !ok {
		return "", false
	}
	for i := range len(rest) {
		if rest[i] != '}' || i == 0 {
			continue
		}
		n := keyspace.NewNames(rest[:i])
		if key == n.Lock() || strings.HasPrefix(key, n.Lock()+":") {
			return rest[:i], true
		}
	}
	return "", false
}

// decoders recognise a kind from the keys and fill the report; the first
// that reports true wins. Each lives in an inspect_*.go file.
var decoders = []func(r *report, keys map[string]*key, n keyspace.Names, now time.Time) bool{
	decodeElection,
	decodeRWLock,
	decodeFairlock,
	decodeMutex,
	decodeSemaphore,
	decodeLeased,
	decodeLatch,
}

// readKeys returns the name's keys with their types, TTLs and contents;
// now is the server's time, which a sorted set's live members are scored
// after. It scans for them unless found lists them already.
func readKeys(ctx context.Context, node redis.UniversalClient, n keyspace.Names, now time.Time, found []string) ([]*key, error) {
	names := slices.Clone(found)
	var err error
	if names == nil {
		if names, err = scanNode(ctx, node, globEscape(n.Lock())+"*"); err != nil {
			return nil, err
		}
	}
	slices.Sort(names)
	var keys []*key
	for _, k := range names {
		if k == n.Lock() || strings.HasPrefix(k, n.Lock()+":") {
			keys = append(keys, &key{Key: k})
		}
	}
	pipe := node.Pipeline()
	types := make([]*redis.StatusCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(ctx, k.Key)
		ttls[i] = pipe.PTTL(ctx, k.Key)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	pipe = node.Pipeline()
	values := make([]func() (any, error), len(keys))
	for i, k := range keys {
		k.Type = types[i].Val()
		k.TTLms = ttls[i].Val().Milliseconds()
		if ttls[i].Val() < 0 {
			k.TTLms = -1 // no expiry (or deleted since the scan)
		}
		values[i] = queueValue(ctx, pipe, k, now)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errs.IsNil(err) {
		return nil, err
	}
	for i, k := range keys {
		if k.Value, err = values[i](); err != nil && !errs.IsNil(err) {
			return nil, err
		}
	}
	return keys, nil
}

// queueValue queues the read of k's contents on pipe and returns how to
// get them after Exec. For a sorted set it also counts the members, all
// and those scored after now (k.Size, k.live): the scores of redisync's
// sets are when their members lapse.
func queueValue(ctx context.Context, pipe redis.Pipeliner, k *key, now time.Time) func() (any, error) {
	switch k.Type {
	case "string":
		c := pipe.Get(ctx, k.Key)
		return func() (any, error) { return c.Result() }
	case "hash":
		c := pipe.HGetAll(ctx, k.Key)
		return func() (any, error) { return c.Result() }
	case "list":
		c := pipe.LRange(ctx, k.Key, 0, keyLimit-1)
		return func() (any, error) { return c.Result() }
	case "set":
		c := pipe.SRandMemberN(ctx, k.Key, keyLimit)
		return func() (any, error) { return c.Result() }
	case "zset":
		c := pipe.ZRangeWithScores(ctx, k.Key, 0, keyLimit-1)
		size := pipe.ZCard(ctx, k.Key)
		live := pipe.ZCount(ctx, k.Key, "("+strconv.FormatInt(now.UnixMilli(), 10), "+inf")
		return func() (any, error) {
			zs, err := c.Result()
			k.Size, k.live = size.Val(), live.Val()
			m := make([]map[string]any, len(zs))
			for i, z := range zs {
				m[i] = map[string]any{"member": z.Member, "score": z.Score}
			}
			return m, err
		}
	default:
		return func() (any, error) { return nil, nil }
	}
}

// subscribers counts the clients subscribed to the unlock channel: on a
// cluster the shard channel on the node of the name.
func subscribers(ctx context.Context, rdb, node redis.UniversalClient, channel string) (int64, error) {
	var m map[string]int64
	var err error
	if _, ok := rdb.(*redis.ClusterClient); ok {
		m, err = node.PubSubShardNumSub(ctx, channel).Result()
	} else {
		m, err = node.PubSubNumSub(ctx, channel).Result()
	}
	return m[channel], err
}

func countExplained(keys []*key) int {
	n := 0
	for _, k := range keys {
		if k.explained {
			n++
		}
	}
	return n
}

// parseInt reads a Redis string value as an integer.
func parseInt(v any) (int64, bool) {
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// tokenField is the field of a lock hash that holds the fencing token of
// its (write) hold.
const tokenField = "@token"

// holdersOf reads a lock hash (hold id -> hold count, and "@token"; a
// version before hold ids kept "@" owner id -> attempt mark), skipping the
// given fields; values that are no integer are returned as count 0.
func holdersOf(h map[string]string, skip ...string) []holder {
	var hs []holder
	for id, v := range h {
		if slices.Contains(skip, id) || strings.HasPrefix(id, "@") {
			continue
		}
		c, _ := parseInt(v)
		mark, _ := parseInt(h["@"+id])
		hs = append(hs, holder{ID: id, process: processOf(id), Count: c, Mark: mark})
	}
	slices.SortFunc(hs, func(a, b holder) int { return strings.Compare(a.ID, b.ID) })
	return hs
}

func (r *report) writeText(w io.Writer) {
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "  %-12s %s\n", label, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(&b, "%s\n", r.Name)
	kind := r.Kind
	if r.note != "" {
		kind += " (" + r.note + ")"
	}
	line("kind", "%s", kind)
	if r.Mode != "" {
		line("mode", "%s", r.Mode)
	}
	for i, h := range r.Holders {
		label := ""
		if i == 0 {
			label = holdersLabel(r)
		}
		if r.Kind == kindElection {
			line(label, "%s%s", h.ID, h.about())
			continue
		}
		if h.LeaseMs != nil {
			line(label, "%s  lease %s%s", h.ID, fmtTTL(*h.LeaseMs), h.about())
		} else {
			line(label, "%s  holds %d%s", h.ID, h.Count, h.about())
		}
	}
	if r.Value != nil {
		line("value", "%s", shortValue(*r.Value))
	}
	if r.TTLms != nil {
		line("ttl", "%s", fmtTTL(*r.TTLms))
	}
	for i, q := range r.Queue {
		label := ""
		if i == 0 {
			label = "queue"
			if r.Kind == kindElection {
				label = "candidates"
			}
		}
		var about []string
		if q.DeadlineMs > 0 {
			about = append(about, "deadline in "+fmtTTL(q.RemainingMs))
		}
		if q.Lapsed {
			about = append(about, "place lapsed: passed by, most likely dead")
		}
		deadline := "no deadline"
		if len(about) > 0 {
			deadline = strings.Join(about, "; ")
		}
		if r.Kind == kindElection {
			deadline = shortValue(q.Value) + "  " + deadline
		}
		line(label, "%d. %s  %s%s", i+1, q.ID, deadline, q.about())
	}
	if r.Permits != nil && r.Total != nil {
		line("permits", "%d available of %d", *r.Permits, *r.Total)
	} else if r.Permits != nil {
		line("permits", "%d available", *r.Permits)
	}
	if r.Count != nil {
		line("count", "%d to go (waiters return at 0)", *r.Count)
	}
	if r.Subscribers > 0 && r.Kind == kindLatch {
		line("waiting", "%d client(s) subscribed to the latch's channel", r.Subscribers)
	} else if r.Subscribers > 0 {
		line("waiting", "%d subscription(s) to the unlock channel or a queued waiter's own", r.Subscribers)
	}
	if r.Token != nil && r.Kind == kindElection {
		line("term", "%d (the leader's term: a fencing token)", *r.Token)
	} else if r.Token != nil {
		line("token", "%d (the current hold's fencing token)", *r.Token)
	}
	if r.Fence != nil {
		expiry := "expires in " + fmtTTL(r.fenceTTLms)
		if r.fenceTTLms < 0 {
			expiry = "no expiry: left by an older release"
		}
		what := "last fencing token handed out"
		if r.Kind == kindElection {
			what = "the last term begun"
		}
		line("fence", "%d (%s; %s)", *r.Fence, what, expiry)
	}
	for _, k := range r.Keys {
		if !k.explained {
			v, _ := json.Marshal(k.Value)
			line("key", "%s  %s  ttl %s  %s", k.Key, k.Type, fmtTTL(k.TTLms), v)
		}
	}
	if r.Hint != "" {
		line("hint", "%s", r.Hint)
	}
	fmt.Fprint(w, b.String())
}

func holdersLabel(r *report) string {
	switch {
	case r.Kind == kindRWLock && r.Mode == "read":
		return "readers"
	case r.Kind == kindRWLock:
		return "holders"
	case r.Kind == kindElection:
		return "leader"
	case len(r.Holders) > 1:
		return "holders"
	}
	return "holder"
}

// fmtTTL prints a TTL in milliseconds; -1 means none.
func fmtTTL(ms int64) string {
	if ms < 0 {
		return "none"
	}
	return fmtDuration(time.Duration(ms) * time.Millisecond)
}
