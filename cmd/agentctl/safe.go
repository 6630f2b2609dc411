package main

// Human output never passes a session's control characters through. A
// session controls much of what agentctl prints: its argv and cwd, its
// screen, its exit reason, the descriptions and messages of its channels;
// a program (or a model with `mcp --yes`) could put an OSC or CSI sequence
// there, and printing it raw would let it retitle, recolour or rewrite the
// operator's terminal, as `spawn e -- bash -c $'sleep 9 #\e]2;pwned\a'` and
// `agentctl list` did. So, as ls and ps do, human output shows such bytes
// escaped, in bash's $'...' spelling (\e, \a, \x01, \u009b): C0 controls
// (but the newlines and tabs agentctl itself lays out with), DEL, C1
// controls, Unicode's bidirectional overrides, and bytes that are not
// UTF-8. An ESC-led sequence is defused by its ESC being shown as \e; the
// rest of it is plain text.
//
// What is escaped, and where:
//   - every verb's human result goes through safeWriter (finish), the
//     guarantee for anything a verb forgets;
//   - a table cell or a one-line field a session controls is escaped whole
//     with safeText first, newlines and tabs too, so it can neither forge a
//     row nor misalign the columns (list, status, channel list, reconcile);
//   - error messages on stderr, the timeout's partial answer and screen,
//     and the spinner's text;
//   - the line-wise streams for people: logs --plain, channel listen.
//
// What is not, by design: the raw streams, which exist to carry the
// session's own bytes to a terminal or a file that will replay them —
// attach and watch (the terminal is the session's while attached),
// logs without --plain (the output as the program wrote it, for a pipe or
// a replay), record (an asciicast, which a player renders) and screenshot
// -o - (an image). JSON output is unchanged: encoding/json escapes what JSON
// needs and a script gets the bytes as they are.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// safeText is s with every control character escaped, newlines and tabs
// included: for a field shown on one line or in a table cell.
func safeText(s string) string { return escapeControls(s, false) }

// safeLines is s with every control character escaped but newlines and
// tabs: for text shown as lines (an answer, a screen).
func safeLines(s string) string { return escapeControls(s, true) }

// needsEscape says whether r must not reach a terminal as it is.
func needsEscape(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi embeddings, overrides, isolates
		return true
	}
	return false
}

// escapeControls escapes what needsEscape names and bytes that are not
// UTF-8; keepLines leaves '\n' and '\t' as they are.
func escapeControls(s string, keepLines bool) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || (needsEscape(r) && !(keepLines && (r == '\n' || r == '\t'))) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'), !needsEscape(r):
			b.WriteString(s[i : i+n])
		default:
			b.WriteString(escapeRune(r))
		}
		i += n
	}
	return b.String()
}

// escapeRune is r in bash's $'...' spelling.
func escapeRune(r rune) string {
	switch r {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\t':
		return `\t`
	case '\n':
		return `\n`
	case '\v':
		return `\v`
	case '\f':
		return `\f`
	case '\r':
		return `\r`
	case 0x1b:
		return `\e`
	}
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// safeWriter escapes control characters (but newlines and tabs) in what
// is written through it. A UTF-8 sequence split between two writes is held
// until its end arrives; Flush writes out a sequence the stream ended in
// the middle of, escaped.
type safeWriter struct {
	w       io.Writer
	pending []byte
}

func newSafeWriter(w io.Writer) *safeWriter { return &safeWriter{w: w} }

// unwrapFile is the file under w, through a safeWriter: a table is as wide
// as the terminal it ends on.
func unwrapFile(w io.Writer) (*os.File, bool) {
	if s, ok := w.(*safeWriter); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

func (s *safeWriter) Write(p []byte) (int, error) {
	buf := append(s.pending, p...)
	// Hold back an incomplete sequence at the end: at most 3 bytes.
	cut := len(buf)
	for k := 1; k <= 3 && k <= len(buf); k++ {
		c := buf[len(buf)-k]
		if c < 0x80 {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	s.pending = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(s.w, safeLines(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes out what Write held back.
func (s *safeWriter) Flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(s.w, safeLines(string(s.pending)))
	s.pending = nil
	return err
}
