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

// Owner ids. A handle's owner id is what Redis records for it: the holder
// of a lock, a reader, a waiter in line, a leased permit's id. It says
// who that is: "<host>:<pid>:<nonce><n>", the holding process's host name
// and pid next to a part that makes it unique without coordination, so
// that an operator reading Redis (redisync inspect, HGETALL) sees which
// process holds what. Earlier versions used a uuid as that part
// ("<host>:<pid>:<uuid>"); ParseOwner reads both.
//
// The unique part is short, because every acquire and release sends it
// (twice: in the hold id and in the waiter's place key) and Redis stores
// it in every field, place and queue entry that names the owner: nonce is
// nonceLen base62 characters drawn once per process from crypto/rand
// (about 59.5 bits), and n counts the owner ids the process made (base
// 36, from 1). Why that is unique: within a process, n never repeats.
// Two processes share a prefix "<host>:<pid>:" only when a pid is reused
// on one host (a restart, a container whose process is always pid 1) or
// two hosts carry the same name, and then they differ unless they drew the
// same nonce: with k such processes whose ids are in Redis at the same
// time, the chance that two of them drew the same nonce is below
// k*k / 2^60 (k = 10,000: about one in ten billion). A uuid's 122 random
// bits bought nothing that matters next to that, at 36 bytes a copy.
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

// nonceLen is the length of a process's nonce, in base62 characters.
const nonceLen = 10

// base62 are the characters of a nonce: letters and digits, safe in keys,
// channels and hash fields (see above).
const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// ownerStart is what every owner id of this process starts with:
// "<host>:<pid>:<nonce>", the nonce telling it from another process with
// the same host name and pid.
var ownerStart = sync.OnceValue(func() string { return process() + newNonce() })

// newNonce draws nonceLen base62 characters from crypto/rand. Each comes
// from one byte below 248 (4 * 62), so every character is equally likely.
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

// made counts the owner ids this process made.
var made atomic.Uint64

// NewOwnerID returns a new owner id for a handle or a leased permit of
// this process: "<host>:<pid>:<nonce><n>" (see above), such as
// "web-3:4121:k3J9xQ2mZp7".
func NewOwnerID() string {
	return ownerStart() + strconv.FormatUint(made.Add(1), 36)
}

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
// Ids of either format (a nonce and a number, or a uuid) name their
// process.
func DescribeOwner(id string) string {
	if o, ok := ParseOwner(id); ok {
		return fmt.Sprintf("pid %d on %s (id %s)", o.PID, o.Host, id)
	}
	return "id " + id
}
