package keyspace

import (
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// An owner id, "<host>:<pid>:<nonce><n>", tells an operator which process
// holds what (older ids have a uuid after the pid). It is short because
// Redis stores it everywhere: a 59.5-bit nonce per process and a counter,
// so k processes sharing host and pid collide with chance below k*k/2^60.
// It goes into keys, so the host keeps only [A-Za-z0-9._-].

const (
	maxHostLen = 64
	nonceLen   = 10
	base62     = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// ownerPrefix returns "<host>:<pid>:" of process pid on host.
func ownerPrefix(host string, pid int) string {
	return safeHost(host) + ":" + strconv.Itoa(pid) + ":"
}

// safeHost returns host cut to maxHostLen, other bytes made '_'.
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

// ownerStart is "<host>:<pid>:<nonce>".
var ownerStart = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	return ownerPrefix(host, os.Getpid()) + newNonce()
})

// newNonce draws each character from a byte below 4*62, without bias.
func newNonce() string {
	b := make([]byte, 0, nonceLen)
	var buf [2 * nonceLen]byte
	for len(b) < nonceLen {
		rand.Read(buf[:]) // never fails (crypto/rand's contract)
		for _, c := range buf {
			if c < 4*62 && len(b) < nonceLen {
				b = append(b, base62[c%62])
			}
		}
	}
	return string(b)
}

var made atomic.Uint64

// NewOwnerID returns a new owner id, such as "web-3:4121:k3J9xQ2mZp7".
func NewOwnerID() string {
	return ownerStart() + strconv.FormatUint(made.Add(1), 36)
}

// NewRequestID returns a uuid for a request's receipt.
func NewRequestID() string { return uuid.NewString() }

// Owner is the process an owner id names.
type Owner struct {
	Host string
	PID  int
}

// ParseOwner reads the process out of an owner or hold id; false if none.
func ParseOwner(id string) (Owner, bool) {
	host, rest, _ := strings.Cut(id, ":") // no ':': rest is "", and so ok below is false
	pid, random, ok := strings.Cut(rest, ":")
	random, count, held := strings.Cut(random, ":")
	if !ok || host == "" || random == "" || held && (count == "" || strings.Trim(count, "0123456789") != "") {
		return Owner{}, false
	}
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return Owner{}, false
	}
	return Owner{Host: host, PID: n}, true
}

// DescribeOwner describes an id: "pid 4121 on web-3 (id web-3:4121:…)".
func DescribeOwner(id string) string {
	if o, ok := ParseOwner(id); ok {
		return fmt.Sprintf("pid %d on %s (id %s)", o.PID, o.Host, id)
	}
	return "id " + id
}
