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
locks: this command refuses them.`

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
		return "", errors.New("not locked: no such lock in Redis (check the name and the server)")
	case kindSemaphore:
		return "", errors.New("a semaphore, not a lock: its permits are not owned, so there is nothing to force open")
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

// describeHold says who held r and who waited, for the unlock message.
func describeHold(r *report) string {
	var parts []string
	for _, h := range r.Holders {
		parts = append(parts, fmt.Sprintf("%s held %d", h.ID, h.Count))
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
