package main

import (
	"fmt"
	"os/exec"
	"strings"
)

// The network: two bridges in the root namespace, one for Redis
// (10.77.1.1/24, where every redis-server listens) and one for the fenced
// resource (10.77.2.1/24), and a network namespace per client with a veth
// pair to each bridge (10.77.1.1x and 10.77.2.1x for client x). A partition
// sets the root side of a client's Redis veth down: its packets to Redis are
// dropped silently, as on a cut cable, while it still reaches the resource,
// the way a holder cut off from Redis still reaches the database it writes.
// Every name starts with "rsa" (redisync analysis), so leftovers are easy to
// find and -cleanup removes them.
const (
	netPrefix   = "rsa"
	redisBridge = "rsa-redis"
	resBridge   = "rsa-res"
	redisIP     = "10.77.1.1"
	resIP       = "10.77.2.1"
)

func clientNS(i int) string      { return fmt.Sprintf("rsa-c%d", i) }
func redisVeth(i int) string     { return fmt.Sprintf("rsa-c%dr", i) }
func resVeth(i int) string       { return fmt.Sprintf("rsa-c%df", i) }
func clientRedisIP(i int) string { return fmt.Sprintf("10.77.1.%d", 10+i) }
func clientResIP(i int) string   { return fmt.Sprintf("10.77.2.%d", 10+i) }

// ip runs the ip command.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// leftovers lists the namespaces and links of an earlier run.
func leftovers() []string {
	var left []string
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], netPrefix+"-") {
				left = append(left, "netns "+f[0])
			}
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 && strings.HasPrefix(f[1], netPrefix+"-") {
				name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
				left = append(left, "link "+name)
			}
		}
	}
	return left
}

// removeLeftovers deletes whatever leftovers lists.
func removeLeftovers() {
	for _, l := range leftovers() {
		kind, name, _ := strings.Cut(l, " ")
		if kind == "netns" {
			_ = ip("netns", "del", name)
		} else {
			_ = ip("link", "del", name)
		}
	}
}

// setupNet creates the bridges and n client namespaces. On error it removes
// what it made.
func setupNet(n int) (err error) {
	defer func() {
		if err != nil {
			removeLeftovers()
		}
	}()
	for _, b := range [][2]string{{redisBridge, redisIP}, {resBridge, resIP}} {
		if err := bridge(b[0], b[1]); err != nil {
			return err
		}
	}
	for i := 1; i <= n; i++ {
		if err := ip("netns", "add", clientNS(i)); err != nil {
			return err
		}
		if err := ip("-n", clientNS(i), "link", "set", "lo", "up"); err != nil {
			return err
		}
		if err := veth(i, redisVeth(i), redisBridge, clientRedisIP(i)); err != nil {
			return err
		}
		if err := veth(i, resVeth(i), resBridge, clientResIP(i)); err != nil {
			return err
		}
	}
	return nil
}

func bridge(name, addr string) error {
	for _, args := range [][]string{
		{"link", "add", name, "type", "bridge"},
		{"addr", "add", addr + "/24", "dev", name},
		{"link", "set", name, "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return nil
}

// veth links client i's namespace to a bridge: host is the root side's
// name, the namespace side is host+"n" with address addr.
func veth(i int, host, br, addr string) error {
	ns, peer := clientNS(i), host+"n"
	for _, args := range [][]string{
		{"link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns},
		{"link", "set", host, "master", br, "up"},
		{"-n", ns, "addr", "add", addr + "/24", "dev", peer},
		{"-n", ns, "link", "set", peer, "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return nil
}

// partition cuts client i off from Redis (up=false) or heals the cut.
func partition(i int, cut bool) error {
	state := "up"
	if cut {
		state = "down"
	}
	return ip("link", "set", redisVeth(i), state)
}
