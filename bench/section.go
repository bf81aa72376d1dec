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
// featuresCommand.
const featuresIntro = `Where a newer server than our minimum (Redis 7.0) offers a cheaper way to
do one of redisync's steps, the step is measured both ways on that
server, in one run, the variants taking turns (issue 43, item 3). Each
server's part below is written by the features scenario run on it; this
command runs it on every server of the matrix (.ci/servers fetches them),
each replacing its own part:

` + "```" + `
%s
` + "```" + `
`
