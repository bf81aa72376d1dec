package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/redistest"
)

// The rows of election_proclaim.lua. An election's other scripts are the
// fair lock's, whose rows run them as a fair lock; package election's
// tests run them as an election's.

// proclaimRow: a Proclaim whose reply is lost is applied once and
// reports success.
func proclaimRow(t *testing.T, r resend) {
	ctx := t.Context()
	// A short lease: the term's counter, which lives a lease, is gone
	// within the row's check for leftovers.
	e := election.New(r.via, r.name, election.WithWatchdogTimeout(time.Second))
	if err := e.Campaign(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	term := e.Term()
	dropped := r.drop()
	if err := e.Proclaim(ctx, "v2"); err != nil {
		t.Fatalf("Proclaim with a lost reply: %v", err)
	}
	mustDropped(t, dropped)
	l, err := election.New(r.direct, r.name).Leader(ctx)
	if err != nil || l.Value != "v2" || l.Term != term {
		t.Fatalf("Leader after a Proclaim with a lost reply = %+v, %v; want v2 in term %d", l, err, term)
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// proclaimLate: a Proclaim whose first copy never arrives applies all the
// same.
func proclaimLate(t *testing.T, l late) {
	ctx := t.Context()
	e := election.New(l.via, l.name)
	if err := e.Campaign(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	if err := e.Proclaim(ctx, "v2"); err != nil {
		t.Fatalf("Proclaim whose first copy never arrived: %v", err)
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// leaderMoveOn: another candidate leads, through direct.
func leaderMoveOn(t *testing.T, l late) func() {
	e := election.New(l.direct, l.name)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := e.Campaign(ctx, "later"); err != nil {
		t.Fatalf("another candidate's Campaign after the operation: %v", err)
	}
	return func() {
		if redistest.Closed(e.Done()) {
			t.Error("the later leader lost its leadership")
		}
		if err := e.Resign(context.Background()); err != nil {
			t.Error(err)
		}
	}
}
