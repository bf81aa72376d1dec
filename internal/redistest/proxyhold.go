package redistest

import (
	"bufio"
	"context"
	"net"
)

// Held is a command that a Hold fault kept from the server: the test
// decides whether, and when, Redis runs it.
type Held struct {
	target string
	caught chan struct{} // closed once a command is held, after raw is set
	raw    []byte
}

// Hold arms a one-shot fault: the next command, on any connection, for
// which match returns true (given its arguments, as for DropReply) is not
// forwarded to the server, and the proxy keeps its bytes. Its client waits
// for a reply that never comes until it gives up and closes the
// connection; the server has not seen the command. Held.Deliver runs it
// later, as a server that read it late would. The commands after it on the
// same connection are forwarded as usual.
func (p *Proxy) Hold(match func(args []string) bool) *Held {
	h := &Held{target: p.target, caught: make(chan struct{})}
	p.arm(&rule{match: match, held: h})
	return h
}

// Caught returns a channel that is closed once a command was held.
func (h *Held) Caught() <-chan struct{} { return h.caught }

// keep records the held command. A rule fires once, so keep runs at most
// once.
func (h *Held) keep(raw []byte) {
	h.raw = raw
	close(h.caught)
}

// Deliver waits, under ctx, until a command was held, then sends it to the
// server on a connection of its own and returns the server's reply as it
// came over the wire. The connection is new, so the reply is RESP2 and the
// command runs in database 0, without AUTH. An error reply is a reply, not
// an error: err reports only a failure to deliver or to read the reply.
// Every call sends the command once more.
func (h *Held) Deliver(ctx context.Context) (string, error) {
	select {
	case <-h.caught:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", h.target)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	// Closing the connection is what interrupts a write or read blocked on
	// it once ctx ends; without this a ctx with no deadline could not.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if _, err := conn.Write(h.raw); err != nil {
		return "", ctxOr(ctx, err)
	}
	f, err := readFrame(bufio.NewReader(conn))
	if err != nil {
		return "", ctxOr(ctx, err)
	}
	return string(f.raw), nil
}

// ctxOr returns ctx's error when ctx ended, since that is why err (a use
// of the connection Deliver closed) happened, and err otherwise.
func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
