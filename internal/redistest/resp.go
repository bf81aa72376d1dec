package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The helpers below speak just enough RESP2 to manage the servers. They use a
// fresh connection per operation instead of a go-redis client so that
// controlling a server never leaves pools or background goroutines behind.

// respError is an error reply ("-ERR ...") sent by the server.
type respError string

func (e respError) Error() string { return string(e) }

type respConn struct {
	conn    net.Conn
	r       *bufio.Reader
	timeout time.Duration
}

func dialRESP(addr string, timeout time.Duration) (*respConn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &respConn{conn: c, r: bufio.NewReader(c), timeout: timeout}, nil
}

func (c *respConn) Close() error { return c.conn.Close() }

// do sends one command and reads its reply. Replies are decoded as string
// (simple and bulk strings), int64, []any, nil or respError.
func (c *respConn) do(args ...string) (any, error) {
	if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		return nil, err
	}
	return c.read()
}

func (c *respConn) read() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return nil, errors.New("redistest: empty RESP line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, respError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, fmt.Errorf("redistest: bad bulk length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, fmt.Errorf("redistest: bad array length %q", body)
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			// An error element does not end the array; keep reading so the
			// stream stays in sync.
			v, err := c.read()
			var re respError
			if err != nil && !errors.As(err, &re) {
				return nil, err
			}
			if err != nil {
				v = re
			}
			out[i] = v
		}
		return out, nil
	default:
		return nil, fmt.Errorf("redistest: unexpected RESP type in %q", line)
	}
}

// command runs one command on a fresh connection to addr.
func command(addr string, timeout time.Duration, args ...string) (any, error) {
	c, err := dialRESP(addr, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.do(args...)
}

// commandString runs a command whose reply is a (simple or bulk) string.
func commandString(addr string, timeout time.Duration, args ...string) (string, error) {
	v, err := command(addr, timeout, args...)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("redistest: %s: unexpected reply %T %v", strings.Join(args, " "), v, v)
	}
	return s, nil
}

// infoField extracts "name:value" from an INFO or CLUSTER INFO reply.
func infoField(info, name string) (string, bool) {
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimRight(line, "\r")
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v, true
		}
	}
	return "", false
}
