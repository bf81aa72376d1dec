package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync/election"
	"github.com/redisync/redisync/internal/keyspace"
	"github.com/redisync/redisync/internal/redistest"
)

// inspect shows an election's leader, value, term and candidates;
// unlock --force makes the leader resign, and the first candidate leads.
func TestInspectAndUnlockElection(t *testing.T) {
	redistest.Long(t)
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		name := redistest.UniqueName(t)
		// Renewed every second: the forced leader learns of it within one.
		leader := election.New(b.client(), name, election.WithWatchdogTimeout(3*time.Second))
		if err := leader.Campaign(ctx, "host-1:8080"); err != nil {
			t.Fatal(err)
		}
		candidate := election.New(b.client(), name)
		got := make(chan error, 1)
		go func() { got <- candidate.Campaign(ctx, "host-2:8080") }()
		redistest.WaitFor(t, 5*time.Second, func() bool {
			return b.rdb.LLen(ctx, keyspace.NewNames(name).Queue()).Val() == 1
		})

		r := inspectJSON(t, b.flags, name)[0]
		if r.Kind != kindElection || r.Value == nil || *r.Value != "host-1:8080" || r.Token == nil || uint64(*r.Token) != leader.Term() {
			t.Errorf("inspect: %+v, want an election led by host-1:8080 in term %d", r, leader.Term())
		}
		if len(r.Holders) != 1 || len(r.Queue) != 1 || r.Queue[0].Value != "host-2:8080" {
			t.Errorf("inspect: leader %v, candidates %v; want one each, the candidate with its value", r.Holders, r.Queue)
		}
		text, _ := mustRun(t, exitOK, b.args("inspect", name)...)
		for _, want := range []string{"election", "leader", `"host-1:8080"`, "term", "candidates", `"host-2:8080"`} {
			if !strings.Contains(text, want) {
				t.Errorf("inspect's text lacks %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "  key  ") {
			t.Errorf("inspect left keys unexplained:\n%s", text)
		}

		stdout, _ := mustRun(t, exitOK, b.args("unlock", "--force", name)...)
		if !strings.Contains(stdout, "unlocked") || !strings.Contains(stdout, "election") {
			t.Errorf("unlock --force on an election says:\n%s", stdout)
		}
		awaitLock(t, got, "the candidate's Campaign after unlock --force")
		l, err := candidate.Leader(ctx)
		if err != nil || l.Value != "host-2:8080" || l.Term <= uint64(*r.Token) {
			t.Errorf("Leader after unlock --force = %+v, %v; want host-2:8080 in a later term", l, err)
		}
		select {
		case <-leader.Done():
		case <-time.After(5 * time.Second):
			t.Error("the forced leader's Done stayed open")
		}
		if err := candidate.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		if r := inspectJSON(t, b.flags, name)[0]; r.Kind != kindFree {
			t.Errorf("after the last resignation inspect says %s, want free", r.Kind)
		}
	})
}
