package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

const unlockAbout = `
The operator's escape hatch: deletes each named lock whoever holds it and
wakes its waiters, so a Lock waiting in any process returns at once. The
holder is not told until its watchdog's next renewal, when its Done channel
closes. Without --force it refuses (exit code 2) and touches nothing.

NAME is the name given to New in the code. For an election it is a forced
resignation: the first candidate in line leads next. Semaphores are not
locks: this command refuses them, and says how to repair one with
"redisync semaphore" (a counting semaphore's count, a leased semaphore's
permits by id).`

func runUnlock(ctx context.Context, out *output, args []string) error {
	fs := newFlagSet(out, "unlock", "unlock --force [flags] NAME...", unlockAbout)
	conn := addConnFlags(fs, false)
	force := fs.Bool("force", false, "really delete the lock, whoever holds it")
	names, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return usagef("no NAME given")
	}
	if !*force {
		return usagef("unlock deletes %s whoever holds it, which breaks their mutual exclusion; add --force if that is what you want", quoteAll(names))
	}
	t, err := conn.open(ctx)
	if err != nil {
		return err
	}
	defer t.close()
	rdb := t.client()
	var errs []error
	for _, name := range names {
		if name == "" {
			errs = append(errs, errors.New("empty NAME"))
			continue
		}
		msg, err := forceUnlock(ctx, rdb, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", name, err))
			continue
		}
		fmt.Fprintf(out.stdout, "%q: %s\n", name, msg)
	}
	return errors.Join(errs...)
}

// forceUnlock deletes the lock name with the force unlock of its kind and
// says what it deleted.
func forceUnlock(ctx context.Context, rdb redis.UniversalClient, name string) (string, error) {
	r, err := inspect(ctx, rdb, name)
	if err != nil {
		return "", err
	}
	switch r.Kind {
	case kindFree:
		if r.Hint != "" {
			return "", fmt.Errorf("not locked: no such lock in Redis; %s", strings.Replace(r.Hint, "redisync inspect", "redisync unlock --force", 1))
		}
		return "", errors.New("not locked: no such lock in Redis (check the name and the server)")
	case kindSemaphore:
		return "", semaphoreRefusal(r)
	case kindUnknown:
		return "", errors.New("keys of a layout redisync does not know: left untouched (see redisync inspect)")
	}
	for _, p := range primitives() {
		if p.kind != r.Kind || p.forceUnlock == nil {
			continue
		}
		deleted, err := p.forceUnlock(ctx, rdb, name)
		if err != nil {
			return "", err
		}
		if !deleted {
			return "released meanwhile: nothing to do", nil
		}
		return "unlocked " + describeHold(r), nil
	}
	return "", fmt.Errorf("kind %s: this redisync binary has no support for it built in", r.Kind)
}

// semaphoreRefusal says why unlock leaves the semaphore r alone, and what
// repairs it instead.
func semaphoreRefusal(r *report) error {
	if !r.Leased {
		return fmt.Errorf("a counting semaphore, not a lock: its permits are not owned, so there is nothing to unlock; "+
			"see its count with 'redisync inspect %q' and repair it with 'redisync semaphore set --force %q N'", r.Name, r.Name)
	}
	ids := make([]string, len(r.Holders))
	for i, h := range r.Holders {
		ids[i] = fmt.Sprintf("%q", h.ID)
	}
	held := "no permit is acquired"
	if len(ids) > 0 {
		held = "acquired: " + strings.Join(ids, ", ")
	}
	return fmt.Errorf("a leased semaphore, not a lock: give a permit back by its id with "+
		"'redisync semaphore release --force %q ID' (%s; 'redisync inspect %q' shows whose)", r.Name, held, r.Name)
}

// describeHold says who held r and who waited, for the unlock message.
func describeHold(r *report) string {
	var parts []string
	for _, h := range r.Holders {
		who := h.ID
		if h.PID != 0 {
			who = fmt.Sprintf("pid %d on %s (%s)", h.PID, h.Host, h.ID)
		}
		parts = append(parts, fmt.Sprintf("%s held %d", who, h.Count))
	}
	s := fmt.Sprintf("(%s", r.Kind)
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, ", ")
	}
	if len(r.Queue) > 0 {
		s += fmt.Sprintf("; %d queued", len(r.Queue))
	}
	if r.Subscribers > 0 {
		s += fmt.Sprintf("; waiters woken in %d client(s)", r.Subscribers)
	}
	return s + ")"
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
