package internal_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/redisync/redisync/internal"
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
			err := internal.Once(t.Context(), "r1", func(receipt string) error {
				receipts = append(receipts, receipt)
				return tc.errs[min(len(receipts), len(tc.errs))-1]
			})
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Once = %v, want %v", err, tc.want)
			}
			if len(receipts) != tc.sends {
				t.Errorf("%d sends, want %d", len(receipts), tc.sends)
			}
			for _, r := range receipts {
				if r != "r1" {
					t.Errorf("sent under receipt %q, want r1", r)
				}
			}
		})
	}
}

func TestOnceCtxDone(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	sends := 0
	err := internal.Once(ctx, "r1", func(string) error {
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
