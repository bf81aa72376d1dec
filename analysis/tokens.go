package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// tokens are the fencing tokens of one hold, by lock server: a lock on one
// server carries one ({0: t}), a quorum multilock one per member it holds.
// An unfenced hold carries none.
type tokens map[int]uint64

// parseTokens reads "0:17,2:19"; "" and "-" are no tokens.
func parseTokens(s string) (tokens, error) {
	t := tokens{}
	if s == "" || s == "-" {
		return t, nil
	}
	for _, part := range strings.Split(s, ",") {
		srv, tok, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("tokens %q: want server:token", s)
		}
		i, err := strconv.Atoi(srv)
		if err != nil || i < 0 {
			return nil, fmt.Errorf("tokens %q: bad server %q", s, srv)
		}
		v, err := strconv.ParseUint(tok, 10, 64)
		if err != nil || v == 0 {
			return nil, fmt.Errorf("tokens %q: bad token %q", s, tok)
		}
		t[i] = v
	}
	return t, nil
}

// String is the wire form, servers in order; "-" for none.
func (t tokens) String() string {
	if len(t) == 0 {
		return "-"
	}
	srvs := make([]int, 0, len(t))
	for s := range t {
		srvs = append(srvs, s)
	}
	slices.Sort(srvs)
	parts := make([]string, len(srvs))
	for i, s := range srvs {
		parts[i] = fmt.Sprintf("%d:%d", s, t[s])
	}
	return strings.Join(parts, ",")
}

// above reports whether t is greater than u on every server both carry:
// a hold that asked for its tokens after another hold had taken u must
// carry tokens above u.
func (t tokens) above(u tokens) bool {
	for s, v := range t {
		if w, ok := u[s]; ok && v <= w {
			return false
		}
	}
	return true
}
