package hold

import "testing"

// A mark is used only when it is higher than every mark the handle's
// attempts set before: an equal one (two refusals in one server
// millisecond) could be named by the grant of the earlier attempt.
func TestNewMark(t *testing.T) {
	var l Lock
	for _, c := range []struct{ in, want int64 }{
		{100, 100}, {100, 0}, {99, 0}, {101, 101}, {100, 0}, {102, 102},
	} {
		if got := l.newMark(c.in); got != c.want {
			t.Fatalf("newMark(%d) = %d, want %d (marks so far up to %d)", c.in, got, c.want, l.marks.Load())
		}
	}
}
