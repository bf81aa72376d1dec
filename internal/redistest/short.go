package redistest

import "testing"

// Long skips t in the quick tier (`go test -short`): t waits for real time
// to pass (a lease or a grant running out, a server restarting, a demo or a
// benchmark running its course), seconds that add up to minutes over the
// suite. The full tier, and CI, run it.
func Long(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("long (real leases, restarts or whole programs); the quick tier (-short) skips it, the full run does not")
	}
}
