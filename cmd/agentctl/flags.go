package main

import (
	"flag"
	"io"
	"strconv"
	"strings"
	"time"
)

// verbFlags parses a verb's arguments: flags may come before, between or
// after positional arguments, and everything after "--" is returned apart
// (a command to run, or text that starts with a dash).
func verbFlags(verb string, args []string, define func(fs *flag.FlagSet)) (pos, afterDash []string, err error) {
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	dash := -1
	for i, a := range args {
		if a == "--" {
			dash = i
			break
		}
	}
	before := args
	if dash >= 0 {
		before, afterDash = args[:dash], args[dash+1:]
	}
	for {
		if err := fs.Parse(before); err != nil {
			return nil, nil, usagef("%s: %v; see agentctl --help", verb, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		before = rest[1:]
	}
	return pos, afterDash, nil
}

// parseSize reads COLSxROWS.
func parseSize(s string) (cols, rows int, err error) {
	c, r, ok := strings.Cut(strings.ToLower(s), "x")
	if ok {
		cols, err = strconv.Atoi(c)
		if err == nil {
			rows, err = strconv.Atoi(r)
		}
	}
	if !ok || err != nil || cols <= 0 || rows <= 0 {
		return 0, 0, usagef("size %q is not COLSxROWS, e.g. 120x40", s)
	}
	return cols, rows, nil
}

// multiFlag collects a repeated flag such as --env K=V.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// ms converts a duration flag to the wire's milliseconds, keeping 0 as "default".
func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return max(d.Milliseconds(), 1)
}

// wantArgs checks the count of positional arguments.
func wantArgs(verb, usage string, pos []string, n int) error {
	if len(pos) != n {
		return usagef("usage: agentctl %s %s", verb, usage)
	}
	return nil
}
