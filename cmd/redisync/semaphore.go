package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/semaphore"
)

const semaphoreAbout = `
Shows and repairs a semaphore's permits. A counting semaphore's permits
are not owned: permits taken by a process that crashed never come back by
themselves, and a Release without an Acquire adds permits. A leased
semaphore's permits have ids and leases: each returns when its lease runs
out, or when it is released by its id.

  semaphore show [--json] NAME...        the permits, holders and receipts (read-only),
                                         as inspect shows them
  semaphore set --force NAME N           counting: make N permits available;
                                         leased: make the total N (acquired ones included)
  semaphore add --force NAME N           add N permits; a negative N takes them away
  semaphore release --force NAME ID...   give back leased permits by id

set, add and release change what every process using NAME counts on:
without --force they refuse (exit code 2) and touch nothing. show exits
with code 3 when a NAME holds nothing in Redis. A NAME with
no keys in Redis is taken for a counting semaphore, unless --leased.
NAME is the name given to New in the code, not a Redis key.`

// opTimeout bounds each change the semaphore command makes: one request.
const opTimeout = 10 * time.Second

func runSemaphore(ctx context.Context, out *output, args []string) error {
	fs := newFlagSet(out, "semaphore", "semaphore show|set|add|release [flags] NAME [N|ID...]", semaphoreAbout)
	conn := addConnFlags(fs, false)
	force := fs.Bool("force", false, "really change the permits")
	leased := fs.Bool("leased", false, "a NAME with no keys is a leased semaphore (set, add)")
	asJSON := fs.Bool("json", false, "show: print a JSON array of reports, as inspect --json does")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("no operation given: show, set, add or release")
	}
	op, pos := pos[0], pos[1:]
	var n int64
	switch op {
	case "show":
		if len(pos) == 0 {
			return usagef("no NAME given")
		}
	case "set", "add":
		if len(pos) != 2 {
			return usagef("%s takes NAME and N", op)
		}
		if n, err = strconv.ParseInt(pos[1], 10, 64); err != nil {
			return usagef("N: %q is not a whole number", pos[1])
		}
		if op == "set" && n < 0 {
			return usagef("N: a semaphore cannot be set to %d permits", n)
		}
	case "release":
		if len(pos) < 2 {
			return usagef("release takes NAME and one or more permit IDs")
		}
	default:
		return usagef("unknown operation %q: show, set, add or release", op)
	}
	if pos[0] == "" {
		return usagef("empty NAME")
	}
	if op != "show" && !*force {
		return usagef("%s changes the permits every process using %q counts on; add --force if that is what you want", op, pos[0])
	}
	t, err := conn.open(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	rdb := t.client()
	if op == "show" {
		return showSemaphores(ctx, out, rdb, pos, *asJSON)
	}
	name := pos[0]
	r, err := inspect(ctx, rdb, name)
	if err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	isLeased, err := semaphoreKind(r, op, *leased)
	if err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if op == "release" {
		return releasePermits(ctx, out, rdb, r, pos[1:])
	}
	before := describePermits(r)
	if err := changePermits(ctx, rdb, name, op, n, isLeased); err != nil {
		return err
	}
	after, err := inspect(ctx, rdb, name)
	if err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	fmt.Fprintf(out.stdout, "%q: %s -> %s\n", name, before, describePermits(after))
	return nil
}

// semaphoreKind tells whether r, the semaphore that op is to change, is
// leased; a name with no keys is one when leased is set. Anything else
// than a semaphore is an error.
func semaphoreKind(r *report, op string, leased bool) (bool, error) {
	switch {
	case r.Kind == kindFree && r.Hint != "":
		return false, fmt.Errorf("no such semaphore in Redis; %s", strings.Replace(r.Hint, "redisync inspect", "redisync semaphore "+op+" --force", 1))
	case r.Kind == kindFree && op == "release":
		return false, errors.New("no such semaphore in Redis (check the name and the server)")
	case r.Kind == kindFree:
		return leased, nil
	case r.Kind != kindSemaphore:
		return false, fmt.Errorf("a %s, not a semaphore: left untouched (see redisync inspect)", r.Kind)
	case op == "release" && !r.Leased:
		return false, errors.New("a counting semaphore: its permits have no ids; give some back with 'redisync semaphore add --force NAME N'")
	case leased && !r.Leased:
		return false, errors.New("a counting semaphore in Redis, not a leased one: drop --leased")
	}
	return r.Leased, nil
}

// changePermits sets (op "set") or adds n permits to the semaphore name.
func changePermits(ctx context.Context, rdb redis.UniversalClient, name, op string, n int64, leased bool) error {
	switch {
	case leased && op == "set":
		return semaphore.NewLeased(rdb, name).SetPermits(ctx, n)
	case leased:
		return semaphore.NewLeased(rdb, name).AddPermits(ctx, n)
	case op == "set":
		return semaphore.New(rdb, name).SetPermits(ctx, n)
	}
	return semaphore.New(rdb, name).AddPermits(ctx, n)
}

// releasePermits gives back the leased permits ids of the semaphore r
// reports on, saying whose each was.
func releasePermits(ctx context.Context, out *output, rdb redis.UniversalClient, r *report, ids []string) error {
	l := semaphore.NewLeased(rdb, r.Name)
	var errs []error
	for _, id := range ids {
		if err := l.Release(ctx, id); err != nil {
			errs = append(errs, err)
			continue
		}
		who := ""
		if p := processOf(id); p.PID != 0 {
			who = fmt.Sprintf(" (acquired by pid %d on %s)", p.PID, p.Host)
		}
		fmt.Fprintf(out.stdout, "%q: released permit %q%s\n", r.Name, id, who)
	}
	return errors.Join(errs...)
}

// describePermits says how many permits r has, for the message of a change.
func describePermits(r *report) string {
	switch {
	case r.Kind == kindFree:
		return "no permits set"
	case r.Permits == nil:
		return "permits unknown"
	case r.Leased && r.Total != nil:
		return fmt.Sprintf("%s in all, %d available (leased)", permits(*r.Total), *r.Permits)
	}
	return permits(*r.Permits) + " available"
}

// permits says "1 permit", "3 permits".
func permits(n int64) string {
	if n == 1 || n == -1 {
		return fmt.Sprintf("%d permit", n)
	}
	return fmt.Sprintf("%d permits", n)
}

// showSemaphores prints inspect's report of each name, as text or JSON.
func showSemaphores(ctx context.Context, out *output, rdb redis.UniversalClient, names []string, asJSON bool) error {
	var reports []*report
	for _, name := range names {
		r, err := inspect(ctx, rdb, name)
		if err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
		reports = append(reports, r)
	}
	return writeReports(out, reports, asJSON)
}
