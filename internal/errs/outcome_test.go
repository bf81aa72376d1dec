package errs_test

import (
	"context"
	"errors"
	"github.com/redisync/redisync/internal/errs"
	"io"
	"testing"
	"time"
)

// lateCtx is a ctx whose deadline has passed but whose timer has not run
// yet, as under a loaded scheduler.
type lateCtx struct{ context.Context }

func (lateCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestCtxErrPassedDeadline(t *testing.T) {
	ctx := lateCtx{context.Background()}
	if err := errs.CtxDone(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CtxDone = %v, want context.DeadlineExceeded", err)
	}
	err := errs.CtxErr(ctx, io.ErrUnexpectedEOF)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("CtxErr = %v, want both the deadline and the cause", err)
	}
	if err := errs.CtxErr(context.Background(), io.ErrUnexpectedEOF); err != io.ErrUnexpectedEOF {
		t.Fatalf("CtxErr without a deadline = %v, want the cause alone", err)
	}
}
