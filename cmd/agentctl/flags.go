package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// splitDash separates a verb's arguments at "--": what follows it is a
// command to run or text that starts with a dash, never flags.
func splitDash(c *cobra.Command, args []string) (pos, afterDash []string) {
	if i := c.ArgsLenAtDash(); i >= 0 {
		return args[:i], args[i:]
	}
	return args, nil
}

// lineAnchors makes ^ and $ in an --until pattern match at each line's
// start and end: the screen and the output are many lines, and '^ok'
// without (?m) could only ever match at the very start, which a wait then
// found out only at its timeout (the README's own '^ok' taught it). \A
// and \z still anchor the whole text.
func lineAnchors(pattern string) string {
	if pattern == "" || strings.Contains(pattern, "(?m") || !strings.ContainsAny(pattern, "^$") {
		return pattern
	}
	return "(?m)" + pattern
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

// ms converts a duration flag to the wire's milliseconds, keeping 0 as "default".
func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return max(d.Milliseconds(), 1)
}

// positiveDuration parses a flag that must be a duration above zero.
func positiveDuration(d *time.Duration) func(string) error {
	return func(s string) error {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration; use a number with a unit, such as 2s or 500ms")
		}
		if v <= 0 {
			return fmt.Errorf("must be above zero, such as 2s; leave the flag out for the default")
		}
		*d = v
		return nil
	}
}

// durationVar defines a duration flag that is zero (its default: leave the
// flag out) or more. A negative one, or one without a unit, is refused with
// the same words as positiveDuration's, where pflag's own would say "time:
// missing unit in duration" and take -1s.
func durationVar(fs *pflag.FlagSet, d *time.Duration, name, usage string) {
	fs.Var((*nonNegativeDuration)(d), name, usage)
}

type nonNegativeDuration time.Duration

func (d *nonNegativeDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration; use a number with a unit, such as 2s or 500ms")
	}
	if v < 0 {
		return fmt.Errorf("is negative; give a duration such as 2s, or 0 (or leave the flag out) for the default")
	}
	*d = nonNegativeDuration(v)
	return nil
}

// String is "0" when unset, which help leaves out as a zero default.
func (d *nonNegativeDuration) String() string {
	if *d == 0 {
		return "0"
	}
	return time.Duration(*d).String()
}

func (d *nonNegativeDuration) Type() string { return "duration" }

// count says n things in English: "1 action", "2 actions".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
