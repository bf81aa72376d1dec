package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// table is one scenario's result, printed as a Markdown table so that it
// reads in a terminal and pastes into the README.
type table struct {
	level int // heading level of the title: 3 (###) unless set
	title string
	head  []string
	rows  [][]string
	notes []string
}

func newTable(title string, head ...string) *table { return &table{title: title, head: head} }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

func (t *table) print(w io.Writer) {
	width := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(" " + c + pad + " |")
			} else {
				b.WriteString(" " + pad + c + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	fmt.Fprintf(w, "\n%s %s\n\n", strings.Repeat("#", cmp.Or(t.level, 3)), t.title)
	line(t.head)
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
		if i > 0 {
			sep[i] = sep[i][1:] + ":"
		}
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	if len(t.notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range t.notes {
			fmt.Fprintln(w, n)
		}
	}
}

// dur formats a duration with three significant digits in a fitting unit.
func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3g s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3g ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.3g µs", float64(d)/float64(time.Microsecond))
	}
}

// num formats a number with at most one decimal.
func num(v float64) string {
	if v >= 100 || v == float64(int64(v)) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// ratio formats how many times a is b.
func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}
