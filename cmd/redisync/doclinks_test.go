package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the repository's root, seen from this package's directory.
const repoRoot = "../.."

// TestDocLinks checks that every relative link in README.md and docs/*.md
// names a file of the repository and, when it has a #fragment into a
// Markdown page, a heading of that page.
func TestDocLinks(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(repoRoot, "README.md")}, pages...)
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, page)
		for _, link := range markdownLinks(string(text)) {
			if err := checkLink(page, link); err != "" {
				t.Errorf("%s: link %q: %s", rel, link, err)
			}
		}
	}
}

// checkLink returns why link, found in page, does not resolve, or "".
func checkLink(page, link string) string {
	if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
		return "" // not relative
	}
	path, frag, _ := strings.Cut(link, "#")
	target := page
	if path != "" {
		target = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
	}
	rel, err := filepath.Rel(repoRoot, target)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "points outside the repository"
	}
	rel = filepath.ToSlash(rel)
	if _, err := os.Stat(target); err != nil {
		return "no such file " + rel
	}
	if frag == "" || !strings.HasSuffix(target, ".md") {
		return ""
	}
	text, err := os.ReadFile(target)
	if err != nil {
		return err.Error()
	}
	if !headingAnchors(string(text))[frag] {
		return "no heading #" + frag + " in " + rel
	}
	return ""
}

var (
	// inlineLink matches [text](target) and ![alt](target); the target
	// ends at whitespace (an optional "title" follows) or ")".
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpan matches `code`, whose brackets are not links.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
)

// markdownLinks returns the targets of the inline links of a Markdown
// text, outside fenced code blocks and code spans.
func markdownLinks(text string) []string {
	var links []string
	fenced := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "``")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			links = append(links, m[1])
		}
	}
	return links
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text: lower case, punctuation dropped, spaces as hyphens, and
// -1, -2, ... appended to repeats.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for line := range strings.Lines(text) {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(trimmed, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(trimmed, "#"))
		a := slug(title)
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestHeadingAnchors(t *testing.T) {
	got := headingAnchors("# Failure model\n## Lost replies and failed releases\n```\n# not a heading\n```\n## What a Redis lock cannot promise\n## `redisync inspect`, read-only\n## Faults\n## Faults\n")
	for _, want := range []string{"failure-model", "lost-replies-and-failed-releases", "what-a-redis-lock-cannot-promise", "redisync-inspect-read-only", "faults", "faults-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a comment in a code block became a heading")
	}
}

func TestMarkdownLinks(t *testing.T) {
	text := "See [a](docs/a.md) and [b](b.md#x \"title\"), `[c](c.md)`.\n```\n[d](d.md)\n```\n![e](e.png) [f](https://example.com)\n"
	got := strings.Join(markdownLinks(text), " ")
	if want := "docs/a.md b.md#x e.png https://example.com"; got != want {
		t.Errorf("markdownLinks = %q, want %q", got, want)
	}
}
