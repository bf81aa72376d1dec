package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// errStale is the resource's refusal of a stale token.
var errStale = errors.New("stale token refused")

// resClient talks to the fenced resource over one connection, dialled
// again after an error. It is used by one goroutine at a time.
type resClient struct {
	addr    string
	timeout time.Duration
	conn    net.Conn
	rd      *bufio.Reader
}

func newResClient(addr string, timeout time.Duration) *resClient {
	return &resClient{addr: addr, timeout: timeout}
}

// call sends one request and returns the reply after "OK"; a refusal is
// errStale; any other error leaves the outcome unknown.
func (c *resClient) call(req string) (string, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, c.timeout)
		if err != nil {
			return "", err
		}
		c.conn, c.rd = conn, bufio.NewReader(conn)
	}
	_ = c.conn.SetDeadline(time.Now().Add(c.timeout))
	line, err := c.exchange(req)
	if err != nil {
		c.close()
		return "", err
	}
	switch {
	case line == "STALE":
		return "", errStale
	case line == "OK" || strings.HasPrefix(line, "OK "):
		return strings.TrimPrefix(strings.TrimPrefix(line, "OK"), " "), nil
	}
	return "", fmt.Errorf("resource: %s", line)
}

func (c *resClient) exchange(req string) (string, error) {
	if _, err := c.conn.Write([]byte(req + "\n")); err != nil {
		return "", err
	}
	line, err := c.rd.ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

func (c *resClient) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn, c.rd = nil, nil
	}
}

func (c *resClient) read(who string, t tokens) (int64, error) {
	s, err := c.call(fmt.Sprintf("R %s %s", who, t))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

func (c *resClient) write(who string, t tokens, v int64) error {
	_, err := c.call(fmt.Sprintf("W %s %s %d", who, t, v))
	return err
}

// count sends E, X or G for who and returns the holders inside after it.
func (c *resClient) count(op, who string) (int, error) {
	s, err := c.call(op + " " + who)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(s)
}

// holder asks which client is most likely in its critical section ("" for
// none).
func (c *resClient) holder() (string, error) {
	s, err := c.call("H")
	if s == "-" {
		s = ""
	}
	return s, err
}
