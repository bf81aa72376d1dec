package script_test

import (
	"testing"

	"github.com/redisync/redisync/internal/script"
)

// A grant message reads back as the release script publishes it, and its
// Payload (a delivery within the process) is the same message; anything
// else is no grant, a grant message of the versions before hold ids ("g")
// included: it names no hold id.
func TestParseGrant(t *testing.T) {
	g, ok := script.ParseGrant("h1732451234567890:host:12:u-u:42#9")
	if !ok || g != (script.Grant{Token: 1732451234567890, ID: "host:12:u-u:42", Seq: 9}) {
		t.Fatalf("ParseGrant = %+v, %v", g, ok)
	}
	if back, ok := script.ParseGrant(g.Payload()); !ok || back != g {
		t.Fatalf("ParseGrant(%q) = %+v, %v; want %+v", g.Payload(), back, ok, g)
	}
	for _, p := range []string{"1", "-1", "", "h", "hx:1", "x1:2", "g17:42", "h1:a:1", "h1:a:1#x"} {
		if _, ok := script.ParseGrant(p); ok {
			t.Errorf("ParseGrant(%q) reads a grant", p)
		}
	}
	if got := script.OwnerOf("host:12:u-u:42"); got != "host:12:u-u" {
		t.Errorf("OwnerOf = %q", got)
	}
}
