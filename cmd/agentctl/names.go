package main

import (
	"slices"
	"strings"

	"github.com/agentd/agentd/pkg/wire"
)

// naturalCompare orders strings as people count: runs of digits compare
// by their value, so w-2 comes before w-10 (ls -v, sort -V).
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da && db {
			na, ra := digitRun(a)
			nb, rb := digitRun(b)
			// Without leading zeros the longer run is the larger number.
			ta, tb := strings.TrimLeft(na, "0"), strings.TrimLeft(nb, "0")
			if c := len(ta) - len(tb); c != 0 {
				return c
			}
			if c := strings.Compare(ta, tb); c != 0 {
				return c
			}
			// Equal values: fewer leading zeros first, so the order is total.
			if c := len(na) - len(nb); c != 0 {
				return c
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digitRun splits s after its leading run of digits.
func digitRun(s string) (run, rest string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

// naturalSorted returns the sessions in natural order of their names.
func naturalSorted(rows []wire.SessionRow) []wire.SessionRow {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b wire.SessionRow) int { return naturalCompare(a.Name, b.Name) })
	return out
}

// shellJoin writes argv as a POSIX shell would need it typed: words with
// spaces or special characters in single quotes, so what list and status
// show can be pasted back into a shell.
func shellJoin(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%^", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	if escapeControls(s, false) != s {
		// Control characters or bytes that are not UTF-8: bash's $'...',
		// which spells them as escapes (see safe.go), so the line is both
		// safe on a terminal and the command to type again.
		// mvdan.cc/sh's syntax.Quote does the same, but its package
		// compiles regexps at start-up (0.1 ms, measured with
		// GODEBUG=inittrace=1), which every run of agentctl would pay.
		r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
		return "$'" + escapeControls(r.Replace(s), false) + "'"
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
