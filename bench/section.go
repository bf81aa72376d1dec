package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// sectionHead starts the page's section that the opt-in scenarios write
// (-section): the last of the page, kept as it is when -page writes the
// rest anew.
const sectionHead = "## Server features"

// serverMark starts one server's part of the section; the part runs to
// the next mark or the end of the page.
const serverMark = "<!-- server: "

// featuresCommand reproduces the section: the features scenario on every
// server of the matrix, each writing its own part.
const featuresCommand = `.ci/servers run -- sh -c 'cd bench && go run . -run "^features$" -section ../docs/benchmarks.md'`

// sectionOf returns page's section from its heading to the end, or "".
func sectionOf(page string) string {
	if i := strings.Index(page, "\n"+sectionHead+"\n"); i >= 0 {
		return page[i+1:]
	}
	return ""
}

// serverParts splits a section into its servers' parts, by server.
func serverParts(section string) map[string]string {
	parts := map[string]string{}
	chunks := strings.Split(section, "\n"+serverMark)
	for _, c := range chunks[1:] {
		server, _, _ := strings.Cut(c, " -->")
		parts[server] = serverMark + strings.TrimRight(c, "\n") + "\n"
	}
	return parts
}

// writeSection writes tables as server's part of the "Server features"
// section of the page at path, replacing that server's earlier part and
// keeping the other servers'. The section's text before the parts is
// featuresIntro. The page is written through a temporary file.
func writeSection(path, server, commit string, when time.Time, tables []*table) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	page := string(old)
	section := sectionOf(page)
	rest := strings.TrimRight(strings.TrimSuffix(page, section), "\n")
	parts := serverParts(section)

	var b strings.Builder
	fmt.Fprintf(&b, "%s%s -->\n", serverMark, server)
	fmt.Fprintf(&b, "\nMeasured %s at commit `%s`.\n", when.UTC().Format("2006-01-02 15:04 UTC"), commit)
	for _, t := range tables {
		t.level = 3
		t.print(&b)
	}
	parts[server] = b.String()

	var out strings.Builder
	out.WriteString(rest)
	out.WriteString("\n\n" + sectionHead + "\n\n")
	out.WriteString(fmt.Sprintf(featuresIntro, featuresCommand))
	names := make([]string, 0, len(parts))
	for s := range parts {
		names = append(names, s)
	}
	slices.Sort(names)
	for _, s := range names {
		out.WriteString("\n" + parts[s])
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(out.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// featuresIntro is the section's text before the servers' parts; %s is
// featuresCommand. It says what was decided from the parts' numbers.
const featuresIntro = `Where a newer server than our minimum (Redis 7.0) offers a cheaper way to
do one of redisync's steps, the step is measured both ways on that
server, in one run, the variants taking turns, five runs in a row
(issue 43, item 3). Each server's part below is written by the features
scenario run on it; this command runs it on every server of the matrix
(.ci/servers fetches them), each replacing its own part:

` + "```" + `
%s
` + "```" + `

The candidates, and what was decided (redisync uses none of them: every
server runs the same scripts, on the commands of Redis 7.0):

- **DELIFEQ** (Valkey 9.0): a compare-and-delete as one command instead
  of a script. On the bare SET NX lock it saves about 4 µs of server time
  per release, two thirds of it, well beyond the runs' spread. But no
  step of redisync deletes a string that equals a value: a mutex is a
  hash of hold ids, and every release also hands the lock to the first
  waiter or publishes, in the same script. Redis 8.4's DELEX and SET
  IFEQ, and Valkey 9.2's DELEX, are the same kind of command on servers
  outside the matrix.
- **Hash-field expiry** (HPEXPIRE, HPTTL: Redis 7.4, Valkey 9.0) for
  the read-write lock's per-reader leases: each read hold's lease becomes
  the expiry of its own field ('r:<hold id>') instead of a timeout key,
  in variants of the three read scripts written for the bench
  (bench/hfe, checked against today's by TestHFEVariantsAgree). It runs
  2 to 9 fewer commands per read Lock+Unlock and saves about a tenth of
  its server time, some 4 µs of 40 (an earlier run of the same command
  saw the pair alone save between nothing and 5 µs per run), and under
  1 µs of 7 per renewal, a saving whose runs' range reaches zero.
  Measurable, but not adopted: it cannot keep one behaviour on every
  server. Redis 7.0 to 7.2 and Valkey 8 have no field expiry, so there
  the layout stays a timeout key per reader; two layouts of one lock
  would meet when a server is upgraded, or fails over to a newer
  replica, under held read locks, and today's read release drops every
  reader whose timeout key it does not find: a reader of the other
  layout would be dropped while it holds, and a writer let in beside
  it. inspect, force-unlock and the operators' view would differ by
  server too. Valkey 9 also stores a small hash with an expiring field
  as a hash table (MEMORY USAGE 248 bytes for three fields,
  against 128 on Redis 8.0).
- **The leased semaphore's permit leases** as field expiry: not built.
  Its zset of permit id by lease end gives, in one command each, the
  count of live permits (ZCARD after ZREMRANGEBYSCORE), the earliest
  lease end (the waiter's sleep bound) and the permits reclaimed (the
  wake-up of waiters); with field expiry a permit lapses unseen by any
  script, so nobody is woken when it does, and the earliest end needs an
  HPTTL over every permit.
- **HSETEX, HGETDEL** (Redis 8.0, Valkey 9.0) and **SET ... IFEQ**
  (Valkey 8.1): no step is a plain set-with-expiry of a hash field, a
  get-and-delete of one, or a compare-and-set of a string without more
  to do in the same script; inside a script each would save at most one
  call of the few shown above, on some servers only.
`
