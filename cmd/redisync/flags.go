package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// usageError is a mistake on the command line (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errHelpShown reports that --help was asked for and answered.
var errHelpShown = errors.New("help shown")

// flagSet is a subcommand's flags with its help text.
type flagSet struct {
	*flag.FlagSet
	usage string // the synopsis after "redisync", e.g. "inspect [flags] NAME..."
	about string // what the command does, a paragraph or two
	help  io.Writer
}

func newFlagSet(out *output, name, usage, about string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are reported by exitCode
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, usage: usage, about: about, help: out.stdout}
}

// parse parses args, flags and positional arguments in any order (as in
// "inspect NAME --json"); everything after "--" is positional, and so is a
// negative number ("semaphore add NAME -2"). It answers --help itself and
// returns errHelpShown.
func (f *flagSet) parse(args []string) ([]string, error) {
	if i := slices.IndexFunc(args, isNegative); i >= 0 && !slices.Contains(args[:i], "--") {
		before, err := f.parse(args[:i])
		if err != nil {
			return nil, err
		}
		after, err := f.parse(args[i+1:])
		if err != nil {
			return nil, err
		}
		return append(append(before, args[i]), after...), nil
	}
	var positional []string
	for {
		err := f.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			f.printHelp()
			return nil, errHelpShown
		}
		if err != nil {
			return nil, &usageError{msg: err.Error()}
		}
		rest := f.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// isNegative reports whether arg is a negative whole number, such as "-2".
func isNegative(arg string) bool {
	_, err := strconv.ParseInt(arg, 10, 64)
	return err == nil && strings.HasPrefix(arg, "-")
}

func (f *flagSet) printHelp() {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: redisync %s\n\n%s\n\nFlags:\n", f.usage, strings.TrimSpace(f.about))
	f.SetOutput(&b)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
	fmt.Fprint(f.help, b.String())
}
