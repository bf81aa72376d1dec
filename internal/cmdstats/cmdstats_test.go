package cmdstats_test

import (
	"maps"
	"testing"

	"github.com/redisync/redisync/internal/cmdstats"
)

// before and after are INFO commandstats replies of a Redis 7.0 server,
// taken around 100 lock+unlock cycles. Each cycle ran one EVALSHA that
// called HMGET, PEXPIRE and SET; the clients also sent 100 SETs and 50
// GETs themselves, and the measurement sent two INFOs.
const (
	before = "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=235432,usec=3030633,usec_per_call=12.87,rejected_calls=0,failed_calls=110\r\n" +
		"cmdstat_hmget:calls=91849,usec=52675,usec_per_call=0.57,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_set:calls=48681,usec=69803,usec_per_call=1.43,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_pexpire:calls=56278,usec=33390,usec_per_call=0.59,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_get:calls=190098,usec=45732,usec_per_call=0.24,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=10,usec=552,usec_per_call=55.20,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_client|setinfo:calls=8,usec=12,usec_per_call=1.50,rejected_calls=0,failed_calls=0\r\n"
	after = "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=235532,usec=3031933,usec_per_call=12.87,rejected_calls=0,failed_calls=110\r\n" +
		"cmdstat_hmget:calls=91949,usec=52735,usec_per_call=0.57,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_set:calls=48881,usec=70103,usec_per_call=1.43,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_pexpire:calls=56378,usec=33449,usec_per_call=0.59,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_get:calls=190148,usec=45744,usec_per_call=0.24,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=12,usec=662,usec_per_call=55.17,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_client|setinfo:calls=8,usec=12,usec_per_call=1.50,rejected_calls=0,failed_calls=0\r\n"
)

// ran is after.Since(before).
var ran = cmdstats.Stats{
	"evalsha": {Calls: 100, Usec: 1300},
	"hmget":   {Calls: 100, Usec: 60},
	"set":     {Calls: 200, Usec: 300},
	"pexpire": {Calls: 100, Usec: 59},
	"get":     {Calls: 50, Usec: 12},
	"info":    {Calls: 2, Usec: 110},
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		info   string
		want   cmdstats.Stats
		wantOK bool
	}{{
		name: "commandstats",
		info: before,
		want: cmdstats.Stats{
			"evalsha":        {Calls: 235432, Usec: 3030633},
			"hmget":          {Calls: 91849, Usec: 52675},
			"set":            {Calls: 48681, Usec: 69803},
			"pexpire":        {Calls: 56278, Usec: 33390},
			"get":            {Calls: 190098, Usec: 45732},
			"info":           {Calls: 10, Usec: 552},
			"client|setinfo": {Calls: 8, Usec: 12},
		},
		wantOK: true,
	}, {
		name: "with other sections",
		info: "# Stats\r\ntotal_commands_processed:1719191\r\ninstantaneous_ops_per_sec:0\r\n\r\n" +
			"# Commandstats\r\ncmdstat_fcall_ro:calls=3,usec=45,usec_per_call=15.00,rejected_calls=0,failed_calls=0\r\n",
		want:   cmdstats.Stats{"fcall_ro": {Calls: 3, Usec: 45}},
		wantOK: true,
	}, {
		name:   "fields in another order, newlines only",
		info:   "cmdstat_get:usec_per_call=0.50,usec=4,calls=8\ncmdstat_del:calls=1,usec=2\n",
		want:   cmdstats.Stats{"get": {Calls: 8, Usec: 4}, "del": {Calls: 1, Usec: 2}},
		wantOK: true,
	}, {
		name:   "a field that is not a number",
		info:   "cmdstat_get:calls=x,usec=4,usec_per_call=0.50\r\n",
		want:   cmdstats.Stats{"get": {Usec: 4}},
		wantOK: true,
	}, {
		name: "no commandstats (miniredis)",
		info: "# Server\r\nredis_version:7.2.0\r\n",
		want: cmdstats.Stats{},
	}, {
		name: "empty",
		want: cmdstats.Stats{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := cmdstats.Parse(tc.info)
			if ok != tc.wantOK || !maps.Equal(got, tc.want) {
				t.Errorf("Parse = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestSince(t *testing.T) {
	b, _ := cmdstats.Parse(before)
	a, _ := cmdstats.Parse(after)
	d := a.Since(b)
	// client|setinfo did not run in between: it is left out.
	if !maps.Equal(d, ran) {
		t.Errorf("Since = %v, want %v", d, ran)
	}
	if got := d.Calls(); got != 552 {
		t.Errorf("Calls = %d, want 552", got)
	}
	if got := d.ScriptCalls(); got != 100 {
		t.Errorf("ScriptCalls = %d, want 100", got)
	}
}

func TestAdd(t *testing.T) {
	// Two masters of a cluster, one of which ran no GET.
	s, _ := cmdstats.Parse("cmdstat_evalsha:calls=3,usec=30,usec_per_call=10.00\r\ncmdstat_get:calls=2,usec=1,usec_per_call=0.50\r\n")
	m, _ := cmdstats.Parse("cmdstat_evalsha:calls=5,usec=40,usec_per_call=8.00\r\n")
	s.Add(m)
	want := cmdstats.Stats{"evalsha": {Calls: 8, Usec: 70}, "get": {Calls: 2, Usec: 1}}
	if !maps.Equal(s, want) {
		t.Errorf("Add = %v, want %v", s, want)
	}
}

// TestUsec checks that a command run inside scripts is not counted twice:
// the script's time includes it.
func TestUsec(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    cmdstats.Stats
		sent map[string]int64
		want float64
	}{{
		// The scripts whole (1300); half the SETs, which the clients
		// sent (150 of 300); the GETs, all sent (12); not the HMGETs and
		// PEXPIREs, run only inside the scripts, nor the INFOs, which
		// no counted client sent.
		name: "scripts and direct calls",
		d:    ran,
		sent: map[string]int64{"evalsha": 100, "set": 100, "get": 50},
		want: 1462,
	}, {
		// A count of sent commands that ran outside the reading (sent
		// after it, or to another server) counts a command at most whole.
		name: "more sent than ran",
		d:    ran,
		sent: map[string]int64{"evalsha": 100, "set": 400, "get": 50},
		want: 1612,
	}, {
		name: "nothing sent: the scripts only",
		d:    ran,
		want: 1300,
	}, {
		name: "no scripts",
		d:    cmdstats.Stats{"set": {Calls: 4, Usec: 8}, "get": {Calls: 2, Usec: 1}},
		sent: map[string]int64{"set": 4, "get": 2},
		want: 9,
	}, {
		name: "every kind of script",
		d: cmdstats.Stats{
			"eval": {Calls: 1, Usec: 1}, "evalsha": {Calls: 1, Usec: 2}, "eval_ro": {Calls: 1, Usec: 4},
			"evalsha_ro": {Calls: 1, Usec: 8}, "fcall": {Calls: 1, Usec: 16}, "fcall_ro": {Calls: 1, Usec: 32},
			"hget": {Calls: 6, Usec: 64},
		},
		want: 63,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.Usec(tc.sent); got != tc.want {
				t.Errorf("Usec = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUsecUnseen(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    cmdstats.Stats
		want float64
	}{
		{"scripts ran: the scripts only", ran, 1300},
		{"no script ran: everything", cmdstats.Stats{"set": {Calls: 4, Usec: 8}, "pexpire": {Calls: 4, Usec: 3}}, 11},
		{"nothing ran", cmdstats.Stats{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.UsecUnseen(); got != tc.want {
				t.Errorf("UsecUnseen = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsScript(t *testing.T) {
	for _, name := range []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"} {
		if !cmdstats.IsScript(name) {
			t.Errorf("IsScript(%q) = false", name)
		}
	}
	for _, name := range []string{"set", "script|load", "function|load", "EVALSHA", ""} {
		if cmdstats.IsScript(name) {
			t.Errorf("IsScript(%q) = true", name)
		}
	}
}
