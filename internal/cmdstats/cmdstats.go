// Package cmdstats measures the time Redis spends running commands, from
// INFO commandstats, with each command counted once.
//
// INFO commandstats has a line per command name:
//
//	cmdstat_evalsha:calls=12,usec=130,usec_per_call=10.83,rejected_calls=0,failed_calls=0
//
// calls= is how many times the command ran and usec= the microseconds
// Redis spent in it, both since the server started (or CONFIG RESETSTAT).
// A command a script runs (redis.call) is counted under its own name as
// well, and its time is also inside the usec of the EVALSHA or FCALL that
// ran it: summing usec over every line counts the work done in scripts
// twice. So [Stats.Usec] counts a script's usec whole, and another
// command's usec only by the share of its calls that the clients sent
// themselves. commandstats does not tell a SET a client sent from one a
// script ran, so the clients must count what they send ([Sent], a go-redis
// hook), and the share assumes the two kinds of call cost the same on
// average. For clients no hook sees, [Stats.UsecUnseen] guesses instead.
//
// A reading covers everything the server ran, for every client: take two
// ([Parse]) and subtract ([Stats.Since]), drop the commands the
// measurement itself sends (INFO, the connection handshake), and expect
// other clients' commands on a busy server to count too. A cluster's
// reading is the sum of its masters' ([Stats.Add]).
package cmdstats

import (
	"strconv"
	"strings"
)

// Stat is one command's line in INFO commandstats.
type Stat struct {
	Calls int64 // calls=: times it ran, inside scripts included
	Usec  int64 // usec=: microseconds Redis spent in it; a script's includes its commands'
}

// Stats is a reading of INFO commandstats, or the difference of two: the
// commands by name, lower case as Redis writes them ("evalsha",
// "client|setinfo").
type Stats map[string]Stat

// Parse reads the cmdstat_ lines of an INFO reply, which may hold other
// sections too; other lines are skipped, and so is a field that is not a
// number. ok reports whether there was any cmdstat_ line: miniredis has
// none.
func Parse(info string) (s Stats, ok bool) {
	s = make(Stats)
	for line := range strings.Lines(info) {
		key, fields, found := strings.Cut(strings.TrimSpace(line), ":")
		name, isStat := strings.CutPrefix(key, "cmdstat_")
		if !found || !isStat {
			continue
		}
		ok = true
		var st Stat
		for field := range strings.SplitSeq(fields, ",") {
			if v, found := strings.CutPrefix(field, "calls="); found {
				st.Calls, _ = strconv.ParseInt(v, 10, 64)
			}
			if v, found := strings.CutPrefix(field, "usec="); found {
				st.Usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		s[name] = st
	}
	return s, ok
}

// Add adds the counts of t to s, as for the readings of a cluster's
// masters.
func (s Stats) Add(t Stats) {
	for name, st := range t {
		sum := s[name]
		s[name] = Stat{sum.Calls + st.Calls, sum.Usec + st.Usec}
	}
}

// Since returns what ran between the reading before and s: the commands
// whose calls grew, by how much.
func (s Stats) Since(before Stats) Stats {
	d := make(Stats)
	for name, st := range s {
		b := before[name]
		if st.Calls > b.Calls {
			d[name] = Stat{st.Calls - b.Calls, st.Usec - b.Usec}
		}
	}
	return d
}

// Calls returns the calls of all the commands of s, those run inside
// scripts included.
func (s Stats) Calls() int64 {
	var n int64
	for _, st := range s {
		n += st.Calls
	}
	return n
}

// ScriptCalls returns the calls of the commands of s that run a script.
func (s Stats) ScriptCalls() int64 {
	var n int64
	for name, st := range s {
		if IsScript(name) {
			n += st.Calls
		}
	}
	return n
}

// scripts are the commands that run a script.
var scripts = map[string]bool{
	"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true, "fcall": true, "fcall_ro": true,
}

// IsScript reports whether the command name (lower case) runs a script:
// EVAL, EVALSHA, FCALL or their _RO forms.
func IsScript(name string) bool { return scripts[name] }

// Usec returns the microseconds Redis spent running the commands of d, a
// [Stats.Since], each once. sent counts the commands the clients sent
// themselves, by name (a [Sent]'s Take; nil is no command): a script
// counts whole, and another command for the share of its calls the
// clients sent, at most all of them; the rest ran inside the scripts,
// whose time includes theirs.
func (d Stats) Usec(sent map[string]int64) float64 {
	var usec float64
	for name, st := range d {
		if IsScript(name) {
			usec += float64(st.Usec)
		} else {
			usec += float64(st.Usec) * min(1, float64(sent[name])/float64(st.Calls))
		}
	}
	return usec
}

// UsecUnseen is [Stats.Usec] for clients whose commands no hook counts (a
// library on a client of its own). A script counts whole, and another
// command whole when no script ran, not at all when one did: it assumes
// the clients either run no script or call their other commands from
// their scripts, which holds for rueidislock, and undercounts any other
// mix.
func (d Stats) UsecUnseen() float64 {
	ranScript := false
	for name := range d {
		ranScript = ranScript || IsScript(name)
	}
	var usec float64
	for name, st := range d {
		if IsScript(name) || !ranScript {
			usec += float64(st.Usec)
		}
	}
	return usec
}
