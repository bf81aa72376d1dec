package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redisync/redisync/internal/redistest"
)

func TestUsageErrors(t *testing.T) {
	// An address nothing listens on: a usage error must be reported before
	// any attempt to connect (exit 2, not 1).
	nowhere := "redis://" + closedAddr(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"demo", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"demo", "--stock", "0"}, "--stock 0"},
		{[]string{"demo", "--stock", "many"}, "invalid value"},
		{[]string{"demo", "--instances", "0"}, "--instances 0"},
		{[]string{"demo", "--think", "-1s"}, "must not be negative"},
		{[]string{"demo", "--redis", nowhere, "oversel"}, `unknown scenario "oversel"`},
		{[]string{"demo", "--redis", nowhere, "--cluster", "127.0.0.1:1"}, "exclude each other"},
		{[]string{"inspect", "--redis", nowhere}, "no NAME"},
		{[]string{"inspect", "--redis", "http://localhost", "x"}, "invalid URL scheme"},
		{[]string{"inspect", "--cluster", "localhost", "x"}, "not host:port"},
		{[]string{"inspect", "--cluster", ",", "x"}, "no node addresses"},
		{[]string{"unlock", "--redis", nowhere, "orders"}, "add --force"},
		{[]string{"unlock", "--force", "--redis", nowhere}, "no NAME"},
		{[]string{"semaphore", "--redis", nowhere}, "no operation given"},
		{[]string{"semaphore", "frob", "x", "--redis", nowhere}, `unknown operation "frob"`},
		{[]string{"semaphore", "set", "x", "--redis", nowhere}, "set takes NAME and N"},
		{[]string{"semaphore", "set", "--force", "x", "many", "--redis", nowhere}, `"many" is not a whole number`},
		{[]string{"semaphore", "set", "--force", "x", "-1", "--redis", nowhere}, "cannot be set to -1 permits"},
		{[]string{"semaphore", "add", "x", "-1", "--redis", nowhere}, "add --force"},
		{[]string{"semaphore", "release", "--force", "x", "--redis", nowhere}, "one or more permit IDs"},
		{[]string{"lock", "--redis", nowhere, "job", "true"}, "put it after --"},
		{[]string{"lock", "--redis", nowhere, "job", "--"}, "put it after --"},
		{[]string{"lock", "--redis", nowhere, "--", "true"}, "one NAME"},
		{[]string{"lock", "--redis", nowhere, "a", "b", "--", "true"}, "one NAME"},
		{[]string{"lock", "--redis", nowhere, "--fair", "--permits", "2", "job", "--", "true"}, "exclude each other"},
		{[]string{"lock", "--redis", nowhere, "--wait", "-1s", "job", "--", "true"}, "negative"},
		{[]string{"lock", "--redis", nowhere, "--lease", "1ms", "job", "--", "true"}, "at least 30ms"},
		{[]string{"inspect", "--redis", nowhere, "--timeout", "0s", "x"}, "--timeout 0s: it must be above zero"},
		{[]string{"list", "--redis", nowhere, "--timeout", "-1s"}, "--timeout -1s: it must be above zero"},
		{[]string{"lock", "--redis", nowhere, "--timeout", "0s", "job", "--", "true"}, "--timeout 0s"},
		{[]string{"bench", "--kinds", "nope"}, `unknown primitive "nope"`},
		{[]string{"bench", "--duration", "0s"}, "--duration 0s"},
		{[]string{"bench", "--goroutines", "0"}, "--goroutines 0"},
		{[]string{"bench", "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr := mustRun(t, exitUsage, tc.args...)
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr does not mention %q:\n%s", tc.want, stderr)
			}
			if stdout != "" {
				t.Errorf("usage error wrote to stdout:\n%s", stdout)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, c := range commands() {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			stdout, _ := mustRun(t, exitOK, args...)
			if !strings.Contains(stdout, "Usage: redisync "+c.name) || !strings.Contains(stdout, "-redis URL") {
				t.Errorf("redisync %s: help lacks the synopsis or --redis:\n%s", strings.Join(args, " "), stdout)
			}
		}
	}
	stdout, _ := mustRun(t, exitOK, "help")
	for _, c := range commands() {
		if !strings.Contains(stdout, c.name) {
			t.Errorf("help does not list %s:\n%s", c.name, stdout)
		}
	}
}

func TestUnreachable(t *testing.T) {
	redistest.Long(t)
	addr := closedAddr(t)
	for _, args := range [][]string{
		{"inspect", "--redis", "redis://user:secret@" + addr, "orders"},
		{"unlock", "--force", "--redis", "redis://" + addr, "orders"},
		{"lock", "--redis", "redis://" + addr, "orders", "--", "true"},
		{"demo", "--cluster", addr},
		{"bench", "--redis", "redis://" + addr},
	} {
		_, stderr := mustRun(t, exitFailure, args...)
		if !strings.Contains(stderr, "cannot reach Redis at") || !strings.Contains(stderr, addr) {
			t.Errorf("redisync %s: unclear message:\n%s", strings.Join(args, " "), stderr)
		}
		if strings.Contains(stderr, "secret") {
			t.Errorf("the password shows in the message:\n%s", stderr)
		}
	}
}

// Against a server that accepts connections but does not answer
// (SIGSTOP), every command that connects gives up its connection check
// after --timeout and exits 1, saying so; without the flag, after its
// default (2s).
func TestConnectTimeout(t *testing.T) {
	srv := redistest.Start(t)
	mustOK(t, syscall.Kill(srv.Pid(), syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(srv.Pid(), syscall.SIGCONT) })
	url := "redis://" + srv.Addr()
	name := redistest.UniqueName(t)
	for _, args := range [][]string{
		{"inspect", name},
		{"list"},
		{"unlock", "--force", name},
		{"semaphore", "show", name},
		{"lock", "--wait", "10s", name, "--", "echo", "ran"},
		{"bench"},
	} {
		args = append([]string{args[0], "--redis", url, "--timeout", "300ms"}, args[1:]...)
		start := time.Now()
		code, stdout, stderr := runCmd(t, args...)
		took := time.Since(start)
		if code != exitFailure || took > time.Second || !strings.Contains(stderr, "no answer within --timeout 300ms") {
			t.Errorf("redisync %s: exit code %d after %v, want %d within 1s saying so; stderr:\n%s", strings.Join(args, " "), code, took, exitFailure, stderr)
		}
		if strings.Contains(stdout, "ran") {
			t.Errorf("redisync %s: the command ran", strings.Join(args, " "))
		}
	}
	start := time.Now()
	code, _, stderr := runCmd(t, "inspect", "--redis", url, name)
	if took := time.Since(start); code != exitFailure || took < defaultConnectTimeout || took > defaultConnectTimeout+time.Second {
		t.Errorf("inspect without --timeout: exit code %d after %v, want %d after about %v; stderr:\n%s", code, took, exitFailure, defaultConnectTimeout, stderr)
	}
}

func TestInterspersedFlags(t *testing.T) {
	fs := newFlagSet(&output{}, "x", "x", "")
	json := fs.Bool("json", false, "")
	pos, err := fs.parse([]string{"a", "--json", "b", "--", "--c"})
	if err != nil || !*json || strings.Join(pos, " ") != "a b --c" {
		t.Fatalf("parse = %q, %v, json %v; want [a b --c], nil, true", pos, err, *json)
	}
	// A negative number is an argument, wherever it stands.
	*json = false
	pos, err = fs.parse([]string{"-2", "a", "--json", "-10", "--", "-3"})
	if err != nil || !*json || strings.Join(pos, " ") != "-2 a -10 -3" {
		t.Fatalf("parse = %q, %v, json %v; want [-2 a -10 -3], nil, true", pos, err, *json)
	}
}

// TestBehindTwemproxy checks that a command pointed at twemproxy, which
// closes the connection on go-redis's HELLO and refuses TIME, SCAN and
// PUBSUB NUMSUB, says so and where to point it instead.
func TestBehindTwemproxy(t *testing.T) {
	nc := redistest.StartNutcracker(t, redistest.SharedServer(t))
	for _, args := range [][]string{
		{"inspect", "--redis", "redis://" + nc.Addr(), "orders"},
		{"list", "--redis", "redis://" + nc.Addr()},
	} {
		_, stderr := mustRun(t, exitFailure, args...)
		if !strings.Contains(stderr, "twemproxy") || !strings.Contains(stderr, "server behind the proxy") {
			t.Errorf("redisync %s: unclear message:\n%s", strings.Join(args, " "), stderr)
		}
	}
}
