package hub

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The cluster connections of the hub speak RESP2 themselves (see node.go):
// what they send is a handful of commands (AUTH, SSUBSCRIBE, SUNSUBSCRIBE,
// PING) and what they read is the replies and pushes of a subscribed
// connection. These are the few encoding rules that needs.

// maxBulk bounds a bulk string the reader accepts: pub/sub payloads of
// redisync are a few bytes, and a corrupt length must not allocate
// gigabytes.
const maxBulk = 1 << 20

// maxArray bounds the elements of an array reply for the same reason.
const maxArray = 1 << 10

// errorReply is a RESP error reply ("-MOVED 3999 127.0.0.1:6381").
type errorReply string

func (e errorReply) Error() string { return string(e) }

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// readReply reads one reply: a string (simple or bulk; "" for a null), an
// int64, an errorReply, or a []any of those. RESP3 types are not expected:
// the connection never sends HELLO, so Redis speaks RESP2 to it.
func readReply(r *bufio.Reader) (any, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, errors.New("hub: empty RESP line")
	}
	body := string(line[1:])
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return errorReply(body), nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("hub: bad RESP integer %q", body)
		}
		return n, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n > maxBulk {
			return nil, fmt.Errorf("hub: bad RESP bulk length %q", body)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n > maxArray {
			return nil, fmt.Errorf("hub: bad RESP array length %q", body)
		}
		if n < 0 {
			return []any(nil), nil
		}
		a := make([]any, n)
		for i := range a {
			if a[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return a, nil
	default:
		return nil, fmt.Errorf("hub: unexpected RESP type %q", line[0])
	}
}

// readLine reads up to CRLF and returns the line without it.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("hub: RESP line too long")
		}
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, errors.New("hub: RESP line without CRLF")
	}
	return line[:len(line)-2], nil
}
