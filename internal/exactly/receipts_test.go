package exactly_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/redisync/redisync/internal/exactly"
	"io"
	"testing"
	"time"
)

// Once resends a request while its outcome is unknown, under the same
// receipt, at most twice; a known outcome or a done ctx ends it.
func TestOnce(t *testing.T) {
	var wrongType error = replyErr("WRONGTYPE the key holds another type")
	for _, tc := range []struct {
		name  string
		errs  []error // what each send returns; the last repeats
		sends int
		want  error
	}{
		{"success", []error{nil}, 1, nil},
		{"lost, then success", []error{io.ErrUnexpectedEOF, nil}, 2, nil},
		{"always lost", []error{io.ErrUnexpectedEOF}, 3, io.ErrUnexpectedEOF},
		{"error reply", []error{wrongType}, 1, wrongType},
		{"lost, then error reply", []error{io.EOF, wrongType}, 2, wrongType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var receipts []string
			var deadlines []int64
			err := exactly.Once(t.Context(), nil, func() string { return "r1" }, func(receipt string, deadline int64) error {
				receipts = append(receipts, receipt)
				deadlines = append(deadlines, deadline)
				return tc.errs[min(len(receipts), len(tc.errs))-1]
			})
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Once = %v, want %v", err, tc.want)
			}
			if len(receipts) != tc.sends {
				t.Errorf("%d sends, want %d", len(receipts), tc.sends)
			}
			for i, r := range receipts {
				if r != "r1" || deadlines[i] != deadlines[0] {
					t.Errorf("send %d under receipt %q and deadline %d, want r1 and the first's %d", i, r, deadlines[i], deadlines[0])
				}
			}
		})
	}
}

// A request that Redis refused as late changed nothing: when that is sure
// (the refused copy was the only one sent, or the refusal came while a
// receipt written in time would live), Once learns the server's clock
// from the refusal and starts the request anew, under a new receipt and
// a deadline on that clock; otherwise it reports the refusal.
func TestOnceLate(t *testing.T) {
	server := time.Now().Add(time.Hour).UnixMilli() // a server clock an hour ahead
	late := replyErr(fmt.Sprintf("LATE %d", server))
	for _, tc := range []struct {
		name  string
		errs  []error
		sends int
		fresh int // receipts used
		err   bool
	}{
		{"refused first, then in time", []error{late, nil}, 2, 2, false},
		{"lost, then refused long after the deadline", []error{io.EOF, late}, 2, 1, true},
		{"always refused", []error{late}, 3, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var clock exactly.ServerClock
			made, sends := 0, 0
			var last int64
			err := exactly.Once(t.Context(), &clock, func() string { made++; return fmt.Sprint("r", made) },
				func(receipt string, deadline int64) error {
					sends++
					last = deadline
					return tc.errs[min(sends, len(tc.errs))-1]
				})
			if (err != nil) != tc.err || (err != nil && !errors.Is(err, exactly.ErrLate)) {
				t.Errorf("Once = %v, want an error matching ErrLate: %v", err, tc.err)
			}
			if sends != tc.sends || made != tc.fresh {
				t.Errorf("%d sends under %d receipts, want %d under %d", sends, made, tc.sends, tc.fresh)
			}
			if !tc.err && last < server {
				t.Errorf("the restarted request's deadline %d is not on the server's clock (%d)", last, server)
			}
		})
	}
}

func TestOnceCtxDone(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	sends := 0
	err := exactly.Once(ctx, nil, func() string { return "r1" }, func(string, int64) error {
		sends++
		cancel() // the ctx ends while the request is in flight
		return io.ErrUnexpectedEOF
	})
	if sends != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Once = %v after %d sends; want one send and an error matching both context.Canceled and the lost reply", err, sends)
	}
}

// replyErr is an error reply from Redis (it satisfies redis.Error).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}
