package keyspace

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
)

// Owner ids. A handle's owner id is what Redis records for it: the holder
// of a lock, a reader, a waiter in line, a leased permit's id. It says
// who that is: "<host>:<pid>:<uuid>", the holding process's host name and
// pid next to a random part that makes it unique without coordination, so
// that an operator reading Redis (redisync inspect, HGETALL) sees which
// process holds what.
//
// Owner ids become parts of keys and channel names (a waiter's place and
// channel) and, as the start of hold ids ("<owner id>:<n>"), of hash
// fields and reader timeout keys ("r:<hold id>"). So the host name is cut
// down to letters, digits, '.', '-' and '_' (any other byte becomes '_',
// the whole at most maxHostLen bytes): an id holds no glob character, no
// space, no '{' or '}' to confuse a hash tag, no ':' but its separators,
// and never starts with '@'.

// maxHostLen bounds the host name in an owner id: an id is stored in every
// field, place and queue entry that names it.
const maxHostLen = 64

// process is this process's part of its owner ids: "<host>:<pid>:".
var process = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	return ownerPrefix(host, os.Getpid())
})

// ownerPrefix returns the start of the owner ids of process pid on host.
func ownerPrefix(host string, pid int) string {
	return safeHost(host) + ":" + strconv.Itoa(pid) + ":"
}

// safeHost returns host with every byte but letters, digits, '.', '-' and
// '_' replaced by '_', cut to maxHostLen bytes; "unknown" when empty.
func safeHost(host string) string {
	if host == "" {
		return "unknown"
	}
	b := []byte(host[:min(len(host), maxHostLen)])
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '_':
		default:
			b[i] = '_'
		}
	}
	return string(b)
}

// NewOwnerID returns a new owner id for a handle or a leased permit of
// this process: "<host>:<pid>:<uuid>".
func NewOwnerID() string { return process() + uuid.NewString() }

// NewRequestID returns a random id for a request's receipt: a uuid, which
// names no process (a receipt holds nothing).
func NewRequestID() string { return uuid.NewString() }

// Owner is what an owner id says about its process.
type Owner struct {
	Host string // the host name, as the id carries it
	PID  int
}

// ParseOwner reads the process out of owner id id, or out of a hold id,
// an owner id followed by ":<n>" (see package hold). It reports false for
// an id that names none: one of an older version (a bare uuid), or a
// leased permit id its caller made up.
func ParseOwner(id string) (Owner, bool) {
	host, rest, ok := strings.Cut(id, ":")
	if !ok || host == "" {
		return Owner{}, false
	}
	pid, random, ok := strings.Cut(rest, ":")
	random, count, held := strings.Cut(random, ":")
	if !ok || random == "" || held && (count == "" || strings.Trim(count, "0123456789") != "") {
		return Owner{}, false
	}
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return Owner{}, false
	}
	return Owner{Host: host, PID: n}, true
}

// DescribeOwner describes owner or hold id id for a person: "pid 4121
// on web-3 (id web-3:4121:…)", or "id …" for an id that names no process.
func DescribeOwner(id string) string {
	if o, ok := ParseOwner(id); ok {
		return fmt.Sprintf("pid %d on %s (id %s)", o.PID, o.Host, id)
	}
	return "id " + id
}
