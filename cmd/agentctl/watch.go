package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// watchVerb is a read-only live view of a session: the current screen,
// then its output as it comes. Unlike attach it never sends input and
// never resizes the session, so any number of people can watch an agent
// at work, beside the one driver attached to it.
func watchVerb() command {
	return verb[*selfPrinted]{
		use: "watch [NAME]", summary: "watch a session live without touching it, or every session as a table (q quits)",
		long: "Show a session's screen and then its output live, read-only: keys pressed here go nowhere\n" +
			"(q, Ctrl-C or Ctrl-] quit) and the session keeps its size. When this terminal is smaller than\n" +
			"the session, its last row says so and the top-left part of the session shows.\n\n" +
			"Without NAME: a table of every session (status, last activity, asks answered, the last line\n" +
			"of its screen), refreshed every second like top; printed once when not on a terminal.\n\n" +
			"watch NAME needs a terminal on stdin; from a script, agentctl logs -f NAME follows the output.",
		args: rangeArgs(0, 1), complete: completeSession,
		interactive: "agentctl list --json and agentctl snapshot NAME --json give the same as data",
		run: func(ctx context.Context, e *env, args []string) (*selfPrinted, error) {
			if len(args) == 0 {
				return nil, watchAll(ctx, e)
			}
			// Its keys (q, Ctrl-C) come from a terminal; from a pipe or
			// /dev/null it could neither be quit nor tell an EOF from a
			// wish to stop. Scripts have logs -f.
			if in, ok := e.stdin.(*os.File); !ok || !isTerminal(in) {
				return nil, usagef("watch NAME needs a terminal on stdin (q quits it); from a script, agentctl logs -f NAME follows the output")
			}
			return nil, watch(ctx, e, args[0])
		},
	}
}

// watchLeaveKeys end a watch: q, Ctrl-C (the terminal is raw, so it
// arrives as a byte, not a signal) and attach's Ctrl-].
var watchLeaveKeys = []byte{'q', 'Q', 0x03, detachKey}

func watch(ctx context.Context, e *env, name string) error {
	c := e.client()
	st, err := c.Status(ctx, name)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("[watching %s, read-only; q quits]", name)
	// statusLine, when this terminal is smaller than the session, is kept
	// on its last row: the session's output would soon scroll a one-off
	// notice away.
	var statusLine []byte
	out, _ := e.stdout.(*os.File)
	if cols, rows := windowSize(out); cols > 0 && (cols < st.Cols || rows < st.Rows) {
		text := fmt.Sprintf("[%dx%d session, top-left shown; q quits]", st.Cols, st.Rows)
		text = elide(text, cols)
		// Save the cursor, write the last row in reverse video, restore.
		statusLine = fmt.Appendf(nil, "\x1b7\x1b[%d;1H\x1b[7m%s\x1b[0m\x1b[K\x1b8", rows, text)
	}
	conn, _, err := wire.DialAttach(ctx, e.socket, wire.AttachParams{Name: name, ReadOnly: true})
	if err != nil {
		return err
	}
	defer conn.Close()
	if in, ok := e.stdin.(*os.File); ok {
		if restore, err := makeRaw(int(in.Fd())); err == nil {
			defer restore()
		}
	}
	fmt.Fprintf(e.stderr, "%s\r\n", note)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		if statusLine == nil {
			io.Copy(e.stdout, conn)
			return
		}
		buf := make([]byte, 32<<10)
		for {
			n, err := conn.Read(buf)
			if n > 0 {
				e.stdout.Write(append(buf[:n:n], statusLine...))
			}
			if err != nil {
				return
			}
		}
	}()
	left := make(chan struct{})
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := e.stdin.Read(buf)
			if bytes.ContainsAny(buf[:n], string(watchLeaveKeys)) {
				close(left)
				return
			}
			if err != nil {
				return // no keyboard (a pipe): watch until the end or an interrupt
			}
		}
	}()
	select {
	case <-ended:
		fmt.Fprintf(e.stderr, "\r\n[session %s ended the stream]\r\n", name)
	case <-left:
		fmt.Fprintf(e.stderr, "\r\n[stopped watching %s]\r\n", name)
	case <-ctx.Done():
		return ctx.Err()
	}
	return errPrinted
}

// watchAll shows every session as a table refreshed once a second, until q
// or Ctrl-C; off a terminal it prints the table once.
func watchAll(ctx context.Context, e *env) error {
	c := e.client()
	out, isFile := e.stdout.(*os.File)
	live := isFile && isTerminal(out)
	if !live {
		table, err := sessionsTable(ctx, c, time.Now(), outputWidth(e.stdout))
		if err != nil {
			return err
		}
		if _, err = e.stdout.Write(table); err != nil {
			return err
		}
		// Printed: no result follows (finish would print a nil one as
		// "null" after the table).
		return errPrinted
	}
	left := make(chan struct{})
	if in, ok := e.stdin.(*os.File); ok {
		if restore, err := makeRaw(int(in.Fd())); err == nil {
			defer restore()
		}
		go func() {
			buf := make([]byte, 64)
			for {
				n, err := in.Read(buf)
				if bytes.ContainsAny(buf[:n], string(watchLeaveKeys)) {
					close(left)
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		table, err := sessionsTable(ctx, c, time.Now(), outputWidth(e.stdout))
		if err != nil {
			return err
		}
		// Home, the table, then clear what an older, longer table left.
		fmt.Fprintf(e.stdout, "\x1b[H%s\x1b[J", bytes.ReplaceAll(table, []byte("\n"), []byte("\x1b[K\r\n")))
		select {
		case <-tick.C:
		case <-left:
			return errPrinted
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sessionsTable renders every session: name, status, last activity, asks
// answered and the last non-blank line of its screen, each row cut to width.
func sessionsTable(ctx context.Context, c *wire.Client, now time.Time, width int) ([]byte, error) {
	list, err := c.List(ctx, wire.ListParams{})
	if err != nil {
		return nil, err
	}
	rows := naturalSorted(list.Sessions)
	var b bytes.Buffer
	fmt.Fprintf(&b, "%-16s %-8s %-9s %5s  %s\n", "NAME", "STATUS", "ACTIVE", "ASKS", "SCREEN")
	for _, r := range rows {
		active, asks, last := "-", "-", ""
		if !r.LastActivity.IsZero() {
			active = ago(now.Sub(r.LastActivity))
		}
		if st, err := c.Status(ctx, r.Name); err == nil {
			asks = fmt.Sprint(st.Asks)
		}
		if r.Status == wire.StatusRunning {
			if snap, err := c.Snapshot(ctx, r.Name); err == nil {
				for i := len(snap.Lines) - 1; i >= 0; i-- {
					if line := strings.TrimSpace(snap.Lines[i]); line != "" {
						last = line
						break
					}
				}
			}
		}
		// The screen's line is the session's text: escaped (safe.go).
		row := fmt.Sprintf("%-16s %-8s %-9s %5s  %s", elide(safeText(r.Name), 16), r.Status, active, asks, safeText(last))
		b.WriteString(elide(row, width))
		b.WriteByte('\n')
	}
	if len(rows) == 0 {
		b.WriteString("(no sessions)\n")
	}
	return b.Bytes(), nil
}
