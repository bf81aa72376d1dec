package redistest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"time"
)

// frame is one complete RESP2 or RESP3 value as it crossed the wire.
type frame struct {
	raw  []byte    // the bytes, forwarded unchanged
	kind byte      // the type byte of the outer value ('*', '>', '+', ...)
	args []string  // for a command: its bulk-string elements
	at   time.Time // when its first byte was there to read
}

// readFrame reads one complete RESP value from r. Commands sent inline
// (a bare line such as "PING\r\n") are accepted too and split on spaces.
func readFrame(r *bufio.Reader) (*frame, error) {
	var buf bytes.Buffer
	f := &frame{}
	first, err := r.Peek(1)
	if err != nil {
		return nil, err
	}
	f.at = time.Now()
	f.kind = first[0]
	if !isRESPType(f.kind) {
		line, err := readLine(r, &buf)
		if err != nil {
			return nil, err
		}
		f.args = splitInline(line)
		f.raw = buf.Bytes()
		return f, nil
	}
	if err := readValue(r, &buf, &f.args, 0); err != nil {
		return nil, err
	}
	f.raw = buf.Bytes()
	return f, nil
}

func isRESPType(b byte) bool {
	switch b {
	case '+', '-', ':', '$', '*', '_', ',', '#', '!', '=', '(', '%', '~', '>', '|':
		return true
	}
	return false
}

// readValue appends one value to buf. Bulk strings directly inside the
// outer array (depth 1) are collected in args.
func readValue(r *bufio.Reader, buf *bytes.Buffer, args *[]string, depth int) error {
	line, err := readLine(r, buf)
	if err != nil {
		return err
	}
	if line == "" {
		return fmt.Errorf("redistest: proxy: empty RESP line")
	}
	kind, body := line[0], line[1:]
	switch kind {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '!', '=':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("redistest: proxy: bad length %q", line)
		}
		if n < 0 {
			return nil
		}
		start := buf.Len()
		if _, err := io.CopyN(buf, r, int64(n)+2); err != nil {
			return err
		}
		if depth == 1 && kind == '$' {
			*args = append(*args, string(buf.Bytes()[start:start+n]))
		}
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("redistest: proxy: bad count %q", line)
		}
		if kind == '%' || kind == '|' {
			n *= 2 // maps and attributes count pairs
		}
		for range max(n, 0) {
			if err := readValue(r, buf, args, depth+1); err != nil {
				return err
			}
		}
		if kind == '|' {
			// An attribute annotates the value that follows it.
			return readValue(r, buf, args, depth)
		}
		return nil
	default:
		return fmt.Errorf("redistest: proxy: unexpected RESP type in %q", line)
	}
}

// readLine reads up to and including "\n", appends it to buf and returns it
// without the line ending.
func readLine(r *bufio.Reader, buf *bytes.Buffer) (string, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// Long inline lines are rare; collect them piecewise.
		rest, err2 := r.ReadString('\n')
		line, err = append(append([]byte(nil), line...), rest...), err2
	}
	if err != nil {
		return "", err
	}
	buf.Write(line)
	return string(bytes.TrimRight(line, "\r\n")), nil
}

func splitInline(line string) []string {
	var out []string
	for _, f := range bytes.Fields([]byte(line)) {
		out = append(out, string(f))
	}
	return out
}

// ReadCommand reads one command, as a client writes it, from r and
// returns its arguments, for a test that looks at what a client sends.
func ReadCommand(r *bufio.Reader) ([]string, error) {
	f, err := readFrame(r)
	if err != nil {
		return nil, err
	}
	return f.args, nil
}
