package keyspace_test

import (
	"github.com/redisync/redisync/internal/keyspace"
	"os"
	"strings"
	"testing"
)

// An owner id names its process, and stays safe in keys, channel names
// and hash fields whatever the host is called.
func TestOwnerIDNamesTheProcess(t *testing.T) {
	id := keyspace.NewOwnerID()
	o, ok := keyspace.ParseOwner(id)
	if !ok || o.PID != os.Getpid() {
		t.Fatalf("ParseOwner(%q) = %+v, %v; want pid %d", id, o, ok, os.Getpid())
	}
	host, _ := os.Hostname()
	if want := keyspace.OwnerPrefix(host, os.Getpid()); !strings.HasPrefix(id, want) {
		t.Errorf("owner id %q does not start with %q", id, want)
	}
	if other := keyspace.NewOwnerID(); other == id {
		t.Fatalf("two handles drew the same owner id %q", id)
	}
}

func TestOwnerPrefixMakesHostsSafe(t *testing.T) {
	for _, tc := range []struct {
		host string
		want string
	}{
		{"web-3", "web-3:42:"},
		{"ip-10-0-0-5.ec2.internal", "ip-10-0-0-5.ec2.internal:42:"},
		{"", "unknown:42:"},
		{"a{b}c", "a_b_c:42:"},
		{"@host", "_host:42:"},
		{"r:1", "r_1:42:"},
		{"h*st?[x] y\\z", "h_st__x__y_z:42:"},
		{"héllo", "h__llo:42:"},
		{strings.Repeat("x", 100), strings.Repeat("x", 64) + ":42:"},
	} {
		got := keyspace.OwnerPrefix(tc.host, 42)
		if got != tc.want {
			t.Errorf("OwnerPrefix(%q) = %q, want %q", tc.host, got, tc.want)
		}
		o, ok := keyspace.ParseOwner(got + "0f8fad5b-d9cb-469f-a165-70867728950e")
		if !ok || o.PID != 42 || o.Host+":42:" != tc.want {
			t.Errorf("ParseOwner of an id with host %q = %+v, %v", tc.host, o, ok)
		}
	}
}

func TestParseOwnerOfIDsThatNameNoProcess(t *testing.T) {
	for _, id := range []string{
		"0f8fad5b-d9cb-469f-a165-70867728950e", // an id of an older version
		"bogus",
		"web-3:x:0f8f",
		"web-3:0:0f8f",
		"web-3:12:",
		":12:0f8f",
		"web-3:12:a:b",
		"web-3:12:a:",
		"web-3:12:a:1:2",
	} {
		if o, ok := keyspace.ParseOwner(id); ok {
			t.Errorf("ParseOwner(%q) = %+v, want none", id, o)
		}
		if got := keyspace.DescribeOwner(id); got != "id "+id {
			t.Errorf("DescribeOwner(%q) = %q", id, got)
		}
	}
	// An owner id, and a hold id (the owner id and a number).
	for _, id := range []string{"web-3:4121:0f8fad5b-d9cb-469f-a165-70867728950e", "web-3:4121:0f8fad5b-d9cb-469f-a165-70867728950e:17"} {
		if got, want := keyspace.DescribeOwner(id), "pid 4121 on web-3 (id "+id+")"; got != want {
			t.Errorf("DescribeOwner(%q) = %q, want %q", id, got, want)
		}
	}
}

// Owner ids are short: the process's nonce and a count, after its host and
// pid; every one a process makes is new, and each parses as its process's
// (as the uuid ids of earlier versions still do).
func TestOwnerIDsAreShortAndNew(t *testing.T) {
	host, _ := os.Hostname()
	prefix := keyspace.OwnerPrefix(host, os.Getpid())
	seen := map[string]bool{}
	var nonce string
	for range 1000 {
		id := keyspace.NewOwnerID()
		if seen[id] {
			t.Fatalf("owner id %q made twice", id)
		}
		seen[id] = true
		unique, ok := strings.CutPrefix(id, prefix)
		if !ok || len(unique) < 11 || len(unique) > 16 {
			t.Fatalf("owner id %q: want %q, a 10-character nonce and a count", id, prefix)
		}
		if strings.Trim(unique, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("owner id %q: the unique part holds more than letters and digits", id)
		}
		if nonce == "" {
			nonce = unique[:10]
		} else if unique[:10] != nonce {
			t.Fatalf("owner id %q: nonce %q, want the process's %q", id, unique[:10], nonce)
		}
		if o, ok := keyspace.ParseOwner(id + ":12"); !ok || o.PID != os.Getpid() {
			t.Fatalf("ParseOwner of hold id %q:12 = %+v, %v", id, o, ok)
		}
	}
}
