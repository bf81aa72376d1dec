package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/internal/keyspace"
)

const listAbout = `
Lists every name in use in Redis (a lock held or waited for, a semaphore,
a latch, an election) with its kind, holder and TTL. PATTERN is a glob
over names, as Redis' MATCH reads it ("orders:*", "job-?"); without it,
every name. NAME is the name given to New, not a Redis key; "redisync
inspect NAME" shows all of one.

It only reads, and never sends KEYS: it walks the keyspace with SCAN, a
batch at a time, on every primary of a cluster, and stops once it found
--limit names (the output then says that there are more).`

// defaultListLimit is how many names list shows unless told.
const defaultListLimit = 1000

func runList(ctx context.Context, out *output, args []string) error {
	fs := newFlagSet(out, "list", "list [flags] [PATTERN]", listAbout)
	conn := addConnFlags(fs, false)
	limit := fs.Int("limit", defaultListLimit, "show at most `N` names")
	asJSON := fs.Bool("json", false, "print a JSON array of inspect's reports instead of a table")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	pattern := "*"
	switch {
	case len(pos) > 1:
		return usagef("list takes at most one PATTERN, got %d", len(pos))
	case len(pos) == 1 && pos[0] != "":
		pattern = pos[0]
	}
	if *limit < 1 {
		return usagef("--limit %d: must be at least 1", *limit)
	}
	t, err := conn.open(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	rdb := t.client()
	found, more, err := findNames(ctx, rdb, pattern, *limit)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(found))
	for name := range found {
		names = append(names, name)
	}
	slices.Sort(names)
	reports := []*report{}
	for _, name := range names {
		r, err := inspectKeys(ctx, rdb, name, found[name])
		if err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
		if r.Kind != kindFree { // a fencing counter alone: nothing in use
			reports = append(reports, r)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(out.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			return err
		}
	} else if len(reports) > 0 {
		tw := tabwriter.NewWriter(out.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tKIND\tTTL\tHOLDER")
		for _, r := range reports {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, listKind(r), listTTL(r), listHolder(r))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out.stdout, "no name in use matches %q\n", pattern)
	}
	if more {
		fmt.Fprintf(out.stderr, "redisync list: more names match %q: only the first %d found are shown (--limit)\n", pattern, *limit)
	}
	return nil
}

// findNames scans every node for the keys of names matching pattern
// (SCAN, a batch at a time) until it has found limit names, and returns
// each name's keys and whether more names were left unread.
func findNames(ctx context.Context, rdb redis.UniversalClient, pattern string, limit int) (map[string][]string, bool, error) {
	var mu sync.Mutex // protects found and more
	found := map[string][]string{}
	more := false
	match := keyspace.Prefix + "{" + pattern + "}*"
	err := forEachNode(ctx, rdb, func(ctx context.Context, node redis.UniversalClient) error {
		var cursor uint64
		for {
			keys, next, err := node.Scan(ctx, cursor, match, scanCount).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			for _, k := range keys {
				name, ok := nameOfKey(k)
				if !ok || !globMatch(pattern, name) {
					continue
				}
				if _, seen := found[name]; !seen && len(found) >= limit {
					more = true
					continue
				}
				found[name] = append(found[name], k)
			}
			full := more
			mu.Unlock()
			if next == 0 || full {
				return nil
			}
			cursor = next
		}
	})
	return found, more, err
}

// listKind is the KIND cell of r.
func listKind(r *report) string {
	switch {
	case r.Leased:
		return r.Kind + " (leased)"
	case r.Kind == kindRWLock && r.Mode != "":
		return r.Kind + " (" + r.Mode + ")"
	}
	return r.Kind
}

// listHolder is the HOLDER cell of r: the holder (and how many more), a
// semaphore's permits, a latch's count.
func listHolder(r *report) string {
	var cells []string
	if len(r.Holders) > 0 {
		h := r.Holders[0].ID
		if p := r.Holders[0].process; p.PID != 0 {
			h += fmt.Sprintf(" (pid %d on %s)", p.PID, p.Host)
		}
		if len(r.Holders) > 1 {
			h += fmt.Sprintf(" +%d more", len(r.Holders)-1)
		}
		cells = append(cells, h)
	}
	switch {
	case r.Permits != nil && r.Total != nil:
		cells = append(cells, fmt.Sprintf("%d of %d available", *r.Permits, *r.Total))
	case r.Permits != nil:
		cells = append(cells, fmt.Sprintf("%d available", *r.Permits))
	case r.Count != nil:
		cells = append(cells, "count "+strconv.FormatInt(*r.Count, 10))
	}
	if len(r.Queue) > 0 {
		cells = append(cells, fmt.Sprintf("%d waiting", len(r.Queue)))
	}
	if len(cells) == 0 {
		return "-"
	}
	return strings.Join(cells, ", ")
}

// listTTL is the TTL cell of r: the remaining lease, "none", or "-".
func listTTL(r *report) string {
	if r.TTLms == nil {
		return "-"
	}
	return fmtTTL(*r.TTLms)
}

// globMatch reports whether s matches the glob pattern as Redis' MATCH
// reads it: * any run, ? any one character, [abc], [^a-z], \x a literal x.
func globMatch(pattern, s string) bool {
	p, str := []rune(pattern), []rune(s)
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			if len(p) == 0 {
				return true
			}
			for i := range len(str) + 1 {
				if globMatch(string(p), string(str[i:])) {
					return true
				}
			}
			return false
		case '?':
			if len(str) == 0 {
				return false
			}
		case '[':
			if len(str) == 0 {
				return false
			}
			end := slices.Index(p[1:], ']') + 1
			if end <= 1 { // no class: a literal '['
				if str[0] != '[' {
					return false
				}
				break
			}
			class, neg := p[1:end], false
			if len(class) > 0 && class[0] == '^' {
				class, neg = class[1:], true
			}
			in := false
			for i := 0; i < len(class); i++ {
				switch {
				case class[i] == '\\' && i+1 < len(class):
					i++
					in = in || class[i] == str[0]
				case i+2 < len(class) && class[i+1] == '-':
					lo, hi := min(class[i], class[i+2]), max(class[i], class[i+2])
					in = in || lo <= str[0] && str[0] <= hi
					i += 2
				default:
					in = in || class[i] == str[0]
				}
			}
			if in == neg {
				return false
			}
			p = p[end:]
		case '\\':
			if len(p) > 1 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(str) == 0 || str[0] != p[0] {
				return false
			}
		}
		p, str = p[1:], str[1:]
	}
	return len(str) == 0
}
