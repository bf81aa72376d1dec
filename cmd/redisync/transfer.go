package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
)

// transferConfig sizes the transfer scenario.
type transferConfig struct {
	transfers int           // concurrent transfers, half each way
	think     time.Duration // between reading a balance and writing it back
	instances []redis.UniversalClient
	prefix    string
}

// openingBalance is what each of the two accounts holds at the start.
const openingBalance = 1000

// stuckAfter is how long a transfer that holds one account waits for the
// other before it gives up: two transfers that cross wait for each other
// forever, and the demo must end.
const stuckAfter = 100 * time.Millisecond

// transferRow is the outcome of one variant.
type transferRow struct {
	variant  string
	checked  bool // must move every transfer, none stuck, balances exact
	done     int64
	stuck    int64
	balances [2]int
	wall     time.Duration
}

// transferVariant is one way of guarding a transfer.
type transferVariant struct {
	name    string
	checked bool
	// move runs one transfer of b from account from to account to.
	move func(b *bank, ctx context.Context, rdb redis.UniversalClient, from, to int) error
}

func transferVariants() []transferVariant {
	return []transferVariant{
		{name: "unguarded", move: (*bank).move},
		{name: "rlock per account, in call order", move: (*bank).moveInCallOrder},
		{name: "multilock.New (ordered by name)", checked: true, move: (*bank).moveUnderGroup},
	}
}

// bank is one variant's two accounts.
type bank struct {
	cfg      *transferConfig
	accounts [2]string // the balances' keys, also the names of their locks
	done     atomic.Int64
	stuck    atomic.Int64
}

// amounts are what a transfer moves: 2 from a to b, 1 from b to a, so
// that lost updates in both directions do not cancel out.
var amounts = [2]int{2, 1}

// move is the unprotected transfer from account from to account to: each
// balance is read, and written back after the think time. Two transfers
// interleaving on an account lose one's update.
func (b *bank) move(ctx context.Context, rdb redis.UniversalClient, from, to int) error {
	for _, step := range []struct {
		account int
		delta   int
	}{{from, -amounts[from]}, {to, +amounts[from]}} {
		n, err := rdb.Get(ctx, b.accounts[step.account]).Int()
		if err != nil {
			return err
		}
		if err := pause(ctx, b.cfg.think); err != nil {
			return err
		}
		if err := rdb.Set(ctx, b.accounts[step.account], n+step.delta, demoKeyTTL).Err(); err != nil {
			return err
		}
	}
	b.done.Add(1)
	return nil
}

// moveInCallOrder locks the paying account, then the receiving one: two
// transfers in opposite directions can each hold the lock the other
// waits for. After stuckAfter the transfer gives up.
func (b *bank) moveInCallOrder(ctx context.Context, rdb redis.UniversalClient, from, to int) error {
	first, second := rlock.New(rdb, b.accounts[from]), rlock.New(rdb, b.accounts[to])
	return locked(ctx, first, func() error {
		wctx, cancel := context.WithTimeout(ctx, stuckAfter)
		defer cancel()
		err := locked(wctx, second, func() error { return b.move(ctx, rdb, from, to) })
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			b.stuck.Add(1)
			return nil
		}
		return err
	})
}

// moveUnderGroup locks both accounts as one group, which takes them in
// the order of their names whatever the direction of the transfer.
func (b *bank) moveUnderGroup(ctx context.Context, rdb redis.UniversalClient, from, to int) error {
	g := multilock.New(rlock.New(rdb, b.accounts[from]), rlock.New(rdb, b.accounts[to]))
	return locked(ctx, g, func() error { return b.move(ctx, rdb, from, to) })
}

// runTransfer runs one variant: every transfer at once, even ones from
// account 0 to 1, odd ones back.
func runTransfer(ctx context.Context, cfg *transferConfig, v transferVariant, idx int) (transferRow, error) {
	b := &bank{cfg: cfg}
	for i := range b.accounts {
		b.accounts[i] = fmt.Sprintf("%stransfer:%d:account-%c", cfg.prefix, idx, 'a'+i)
		if err := cfg.instances[0].Set(ctx, b.accounts[i], openingBalance, demoKeyTTL).Err(); err != nil {
			return transferRow{}, err
		}
	}
	row := transferRow{variant: v.name, checked: v.checked}
	var err error
	row.wall, err = crowd(ctx, cfg.instances, cfg.transfers, func(ctx context.Context, rdb redis.UniversalClient, i int) error {
		return v.move(b, ctx, rdb, i%2, 1-i%2)
	})
	if err != nil {
		return row, fmt.Errorf("%s: %w", v.name, err)
	}
	row.done, row.stuck = b.done.Load(), b.stuck.Load()
	for i, key := range b.accounts {
		if row.balances[i], err = cfg.instances[0].Get(ctx, key).Int(); err != nil {
			return row, err
		}
	}
	return row, nil
}

func demoTransfer(ctx context.Context, w io.Writer, cfg *transferConfig) error {
	toB, toA := (cfg.transfers+1)/2, cfg.transfers/2
	moved := amounts[0]*toB - amounts[1]*toA
	want := [2]int{openingBalance - moved, openingBalance + moved}
	fmt.Fprintf(w, "\n== transfer ==\n%d concurrent transfers between accounts a and b (%d of %d a->b, %d of %d b->a) on %d\n"+
		"instances. A transfer debits one balance and credits the other, each read, then\n"+
		"written back %v later. A transfer stuck for %v holding one account gives up.\n\n",
		cfg.transfers, toB, amounts[0], toA, amounts[1], len(cfg.instances), cfg.think, stuckAfter)
	tab := newTable("variant", "moved", "stuck", "balances a/b", "wall time")
	var rows []transferRow
	for i, v := range transferVariants() {
		row, err := runTransfer(ctx, cfg, v, i)
		if err != nil {
			return err
		}
		rows = append(rows, row)
		tab.add(row.variant, fmt.Sprint(row.done), fmt.Sprint(row.stuck), fmt.Sprintf("%d/%d", row.balances[0], row.balances[1]), fmtDuration(row.wall))
	}
	tab.write(w)
	fmt.Fprintf(w, "\nThe balances should end at %d/%d.\n", want[0], want[1])
	var failed []string
	for _, r := range rows {
		switch {
		case r.checked && (r.done != int64(cfg.transfers) || r.stuck != 0 || r.balances != want):
			failed = append(failed, fmt.Sprintf("%s moved %d, stuck %d, balances %d/%d; want %d, 0, %d/%d",
				r.variant, r.done, r.stuck, r.balances[0], r.balances[1], cfg.transfers, want[0], want[1]))
		case r.checked:
		case r.stuck > 0:
			fmt.Fprintf(w, "- %s: %d times a transfer held one account while one going the other way held the other\n", r.variant, r.stuck)
		case r.balances != want:
			fmt.Fprintf(w, "- %s: transfers overwrote each other's balances (lost updates)\n", r.variant)
		default:
			fmt.Fprintf(w, "- %s: no harm this time (the race needs transfers that overlap: try a longer --think)\n", r.variant)
		}
	}
	if err := failures(w, "transfer", failed); err != nil {
		return err
	}
	fmt.Fprintln(w, "- a multilock takes both accounts in one order whatever the direction: all moved, none stuck, balances exact: checked")
	return nil
}
