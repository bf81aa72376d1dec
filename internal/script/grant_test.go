package script_test

import (
	"testing"

	"github.com/redisync/redisync/internal/script"
)

// A grant message reads back as the release script publishes it, and its
// Payload (a delivery within the process) is the same message; anything
// else is no grant.
func TestParseGrant(t *testing.T) {
	g, ok := script.ParseGrant("g1732451234567890:42")
	if !ok || g != (script.Grant{Token: 1732451234567890, Mark: 42}) {
		t.Fatalf("ParseGrant = %+v, %v", g, ok)
	}
	if back, ok := script.ParseGrant(g.Payload()); !ok || back != g {
		t.Fatalf("ParseGrant(%q) = %+v, %v; want %+v", g.Payload(), back, ok, g)
	}
	for _, p := range []string{"1", "-1", "", "g", "gx:1", "x1:2"} {
		if _, ok := script.ParseGrant(p); ok {
			t.Errorf("ParseGrant(%q) reads a grant", p)
		}
	}
}
