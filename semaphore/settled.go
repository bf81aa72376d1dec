package semaphore

import "sync"

// Acquire receipts, and when they go.
//
// Every acquire request of a counting semaphore writes a receipt key,
// redisync:{name}:acquire:<id>: the permits it took, or "x" once it was
// cancelled. A request's scripts run under its receipt for as long as its
// caller waits (a lost reply whose undo failed leaves its outcome
// unknown, and Redis may stay out of reach for a while: the undo is sent
// again, under the receipt, until it goes through), and an undo that
// found no receipt would not know what the request took. So no retry may
// outlive the receipt, and no lifetime is long enough for a wait that
// ctx does not bound: the receipt is kept until the handle knows the
// request's outcome, then deleted. Its lifetime (acquireReceiptTTL, an
// hour) is a safety net for receipts whose handle went away first.
//
// A receipt is settled once every script sent under it has been answered
// and the outcome is final: the request holds its permits (its reply was
// read), or it was cancelled by an undo whose reply was read. Settled
// receipts are deleted by the handle's next script (acquire, undo,
// release, set or drain): each passes up to settledPerScript of them, in
// the semaphore's slot, and the script deletes them, so an uncontended
// Acquire and Release cost no round trip more than before. A script that
// fails hands its receipts back for the next one.
//
// A receipt one of whose scripts had an unknown outcome (a lost reply) is
// never settled: a copy of that script may still be on its way to Redis,
// in a TCP retransmission or a proxy's buffer, and must find the receipt
// when it lands, "x" or the permits, rather than take permits again. It
// lives out its hour, far longer than any retransmission.

const (
	// settledPerScript is how many settled receipts one script deletes.
	settledPerScript = 4
	// settledMax bounds the receipts waiting to be deleted while scripts
	// keep failing; the ones beyond it expire by themselves.
	settledMax = 256
)

// settledQueue holds the settled acquire receipts of a Semaphore that are
// still to be deleted.
type settledQueue struct {
	mu   sync.Mutex // guards keys
	keys []string
}

// add queues the settled receipts keys.
func (q *settledQueue) add(keys ...string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.keys = append(q.keys, keys[:max(0, min(len(keys), settledMax-len(q.keys)))]...)
}

// take removes and returns up to settledPerScript receipts for a script
// to delete.
func (q *settledQueue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.keys), settledPerScript)
	if n == 0 {
		return nil
	}
	keys := make([]string, n)
	copy(keys, q.keys[len(q.keys)-n:])
	q.keys = q.keys[:len(q.keys)-n]
	return keys
}

// withSettled runs script with settled receipts for it to delete, and
// queues them again when it fails: they may not have been deleted.
// Deleting a receipt twice is harmless, since no script writes a settled
// receipt again.
func (s *Semaphore) withSettled(script func(settled []string) error) error {
	keys := s.settled.take()
	err := script(keys)
	if err != nil && len(keys) > 0 {
		s.settled.add(keys...)
	}
	return err
}
