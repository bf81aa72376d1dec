package hold

import "testing"

// A mark is used only when it is higher than every mark the handle's
// attempts set before: an equal one (two refusals in one server
// millisecond) could be named by the grant of the earlier attempt.
func TestNewMark(t *testing.T) {
	var l Lock
	for _, c := range []struct{ in, want float64 }{
		{100, 100}, {100, 0}, {99, 0}, {100.5, 100.5}, {101, 101}, {100, 0}, {0, 0}, {102, 102},
	} {
		if got := l.newMark(c.in); got != c.want {
			t.Fatalf("newMark(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
