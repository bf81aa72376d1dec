package main

import (
	"fmt"
	"os/exec"
	"strings"
)

// The network: two bridges in the root namespace, one for Redis
// (10.77.1.1/24, where the harness and the Sentinel are) and one for the
// fenced resource (10.77.2.1/24), a network namespace per client with a
// veth pair to each bridge (10.77.1.1x and 10.77.2.1x for client x), and a
// network namespace per redis-server with a veth pair to the Redis bridge
// (10.77.1.3x for server x), every server on port 6379 of its own address.
// A partition sets the root side of a client's Redis veth down: its
// packets to Redis are dropped silently, as on a cut cable, while it still
// reaches the resource, the way a holder cut off from Redis still reaches
// the database it writes. A cut between two given addresses (a client and
// one of the quorum's servers, a primary and its replica) is a blackhole
// route in the namespace of one side: its packets to the other are
// dropped, and so is every reply it would send. Every name starts with
// "rsa" (redisync analysis), so leftovers are easy to find and -cleanup
// removes them; -netslot moves the names and the addresses aside so that
// a second run can go on beside the first.
var (
	netPrefix   = "rsa"
	redisBridge = "rsa-redis"
	resBridge   = "rsa-res"
	redisNet    = "10.77.1"
	redisIP     = "10.77.1.1"
	sentinelIP  = "10.77.1.2" // a second address of the Redis bridge: the Sentinel's, cut apart from the harness's
	resIP       = "10.77.2.1"
)

// serverNodes is how many server namespaces the harness makes: the
// quorum's three, and a replica of the first.
const serverNodes = 4

// useNetSlot moves every name and address of the run to slot k (0 is the
// default): prefix "rsa" becomes "rsb", "rsc"..., 10.77.1/10.77.2 become
// 10.77.(10k+1)/10.77.(10k+2).
func useNetSlot(k int) {
	netPrefix = "rs" + string(rune('a'+k))
	redisBridge, resBridge = netPrefix+"-redis", netPrefix+"-res"
	redisNet = fmt.Sprintf("10.77.%d", 10*k+1)
	redisIP, sentinelIP = redisNet+".1", redisNet+".2"
	resIP = fmt.Sprintf("10.77.%d.1", 10*k+2)
}

func clientNS(i int) string      { return fmt.Sprintf("%s-c%d", netPrefix, i) }
func redisVeth(i int) string     { return fmt.Sprintf("%s-c%dr", netPrefix, i) }
func resVeth(i int) string       { return fmt.Sprintf("%s-c%df", netPrefix, i) }
func clientRedisIP(i int) string { return fmt.Sprintf("%s.%d", redisNet, 10+i) }
func clientResIP(i int) string   { return fmt.Sprintf("%s.%d", strings.TrimSuffix(resIP, ".1"), 10+i) }
func serverNS(k int) string      { return fmt.Sprintf("%s-s%d", netPrefix, k) }
func serverVeth(k int) string    { return fmt.Sprintf("%s-s%dr", netPrefix, k) }
func serverIP(k int) string      { return fmt.Sprintf("%s.%d", redisNet, 30+k) }

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
	if err := ip("addr", "add", sentinelIP+"/24", "dev", redisBridge); err != nil {
		return err
	}
	for k := 1; k <= serverNodes; k++ {
		if err := ip("netns", "add", serverNS(k)); err != nil {
			return err
		}
		if err := ip("-n", serverNS(k), "link", "set", "lo", "up"); err != nil {
			return err
		}
		if err := vethTo(serverNS(k), serverVeth(k), redisBridge, serverIP(k)); err != nil {
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
		if err := vethTo(clientNS(i), redisVeth(i), redisBridge, clientRedisIP(i)); err != nil {
			return err
		}
		if err := vethTo(clientNS(i), resVeth(i), resBridge, clientResIP(i)); err != nil {
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

// vethTo links namespace ns to a bridge: host is the root side's name,
// the namespace side is host+"n" with address addr.
func vethTo(ns, host, br, addr string) error {
	peer := host + "n"
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

// blackhole drops, in namespace ns, every packet to addr (cut) or stops
// dropping them (heal).
func blackhole(ns, addr string, cut bool) error {
	op := "add"
	if !cut {
		op = "del"
	}
	return ip("-n", ns, "route", op, "blackhole", addr+"/32")
}

// healAll removes every blackhole route and sets every client link up.
func healAll(clients int) {
	for i := 1; i <= clients; i++ {
		_ = partition(i, false)
		_ = ip("-n", clientNS(i), "route", "flush", "type", "blackhole")
	}
	for k := 1; k <= serverNodes; k++ {
		_ = ip("-n", serverNS(k), "route", "flush", "type", "blackhole")
	}
}
