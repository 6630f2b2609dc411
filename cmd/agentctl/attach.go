package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/agentd/agentd/pkg/wire"
)

// detachKey ends an attach without touching the session: Ctrl-] (0x1d), the
// key telnet made familiar, which terminal programs rarely need.
const detachKey = 0x1d

func attachVerb() command {
	var readOnly bool
	var detachKeys string
	return verb[*selfPrinted]{
		use: "attach NAME [--read-only] [--detach-keys KEYS]", summary: "an interactive terminal on a session; Ctrl-] detaches",
		long: "An interactive terminal on the session: its screen, then its output live, and your keys go to\n" +
			"its program. Ctrl-] detaches and leaves the session running; --detach-keys names another key or\n" +
			"sequence, as docker's flag does (ctrl-p,ctrl-q). The reminder shows on this terminal's last row\n" +
			"until the program draws there.\n\n" +
			"stdin must be a terminal: to type into a session from a script use agentctl send, to read its\n" +
			"output agentctl logs -f.",
		args: exactArgs(1), complete: completeSession,
		interactive: "agentctl snapshot NAME --json gives the screen as data",
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&readOnly, "read-only", false, "watch without typing")
			fs.StringVar(&detachKeys, "detach-keys", "ctrl-]", "the key or comma-separated keys that detach (ctrl-p,ctrl-q)")
		},
		flagComplete: map[string]completeKind{"detach-keys": completeNone},
		run: func(ctx context.Context, e *env, args []string) (*selfPrinted, error) {
			seq, err := parseDetachKeys(detachKeys)
			if err != nil {
				return nil, err
			}
			if in, ok := e.stdin.(*os.File); !ok || !term.IsTerminal(int(in.Fd())) {
				return nil, usagef("attach needs a terminal on stdin (its keys go to the session); from a script, agentctl send NAME TEXT types and agentctl logs -f NAME reads")
			}
			return nil, attach(ctx, e, args[0], readOnly, seq)
		},
	}
}

func attach(ctx context.Context, e *env, name string, readOnly bool, detach []byte) error {
	if readOnly {
		conn, _, err := wire.DialAttach(ctx, e.socket, wire.AttachParams{Name: name, ReadOnly: true})
		if err != nil {
			return err
		}
		return attachStream(ctx, e, name, conn, conn, nil, nil, detach)
	}
	// Keys go as attach frames, so the window's size travels with them:
	// the session is sized to this terminal before the first repaint and
	// again at each SIGWINCH, all on the one connection. SIGWINCH is
	// caught before the size is read, so no resize from then on is lost.
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	out, _ := e.stdout.(*os.File)
	cols, rows := windowSize(out)
	conn, _, err := wire.DialAttach(ctx, e.socket, wire.AttachParams{Name: name, Cols: cols, Rows: rows, FramedInput: true})
	if staleDaemon(err) {
		// An agentd from before framed input, still running after an
		// upgrade: size the session on the side, as it knows, and send
		// bare keys.
		c := e.client() // made here: resize runs on SIGWINCH's goroutine too
		resize := func(cols, rows int) {
			c.Resize(ctx, wire.ResizeParams{Name: name, Cols: cols, Rows: rows})
		}
		if cols > 0 {
			resize(cols, rows)
		}
		if conn, _, err = wire.DialAttach(ctx, e.socket, wire.AttachParams{Name: name}); err != nil {
			return err
		}
		return attachStream(ctx, e, name, conn, conn, winch, resize, detach)
	}
	if err != nil {
		return err
	}
	framed := wire.NewAttachWriter(conn)
	return attachStream(ctx, e, name, conn, framed, winch, func(cols, rows int) { framed.Resize(cols, rows) }, detach)
}

// staleDaemon says whether err is an agentd that does not know the attach
// parameters this agentctl sends: it answers unknown fields as invalid.
func staleDaemon(err error) bool {
	var we *wire.Error
	return errors.As(err, &we) && we.Code == wire.CodeInvalidParams && strings.Contains(we.Message, "unknown field")
}

// attachStream runs an attach on conn: stdin's keys to keys until the
// detach sequence, conn's output to stdout, and resize at each SIGWINCH on
// winch (nil for none), until the session ends the stream, the user
// detaches or ctx ends.
func attachStream(ctx context.Context, e *env, name string, conn net.Conn, keys io.Writer, winch chan os.Signal, resize func(cols, rows int), detach []byte) error {
	defer conn.Close()
	in, _ := e.stdin.(*os.File)
	out, _ := e.stdout.(*os.File)
	if winch != nil {
		go func() {
			for range winch {
				if cols, rows := windowSize(out); cols > 0 {
					resize(cols, rows)
				}
			}
		}()
	}
	if in != nil {
		if restore, err := makeRaw(int(in.Fd())); err == nil {
			defer restore()
		}
	}
	banner := fmt.Sprintf("[attached to %s; %s detaches]", name, keyName(detach))
	fmt.Fprintf(e.stderr, "%s\r\n", banner)

	ended := make(chan struct{})
	go func() {
		// The session's repaint clears the screen, and the banner with
		// it: after the first output it is drawn again on the last row
		// (cursor saved and restored), where it stays until the program
		// draws there.
		cols, rows := windowSize(out)
		buf := make([]byte, 32<<10)
		first := true
		for {
			n, err := conn.Read(buf)
			if n > 0 {
				e.stdout.Write(buf[:n])
				if first && rows > 0 {
					fmt.Fprintf(e.stdout, "\x1b7\x1b[%d;1H\x1b[7m%s\x1b[0m\x1b[K\x1b8", rows, elide(banner, cols))
				}
				first = false
			}
			if err != nil {
				break
			}
		}
		close(ended)
	}()
	detached := make(chan struct{})
	go func() {
		defer close(detached)
		d := &detacher{seq: detach}
		buf := make([]byte, 4096)
		for {
			n, err := e.stdin.Read(buf)
			pass, done := d.feed(buf[:n])
			if len(pass) > 0 {
				if _, werr := keys.Write(pass); werr != nil {
					return
				}
			}
			if done {
				return
			}
			if err != nil {
				// Input ended (a pipe): keep watching until the session
				// ends or the user interrupts.
				<-ended
				return
			}
		}
	}()
	select {
	case <-ended:
		fmt.Fprintf(e.stderr, "\r\n[session %s ended the stream]\r\n", name)
	case <-detached:
		fmt.Fprintf(e.stderr, "\r\n[detached from %s]\r\n", name)
	case <-ctx.Done():
		// --timeout or an interrupt: not a clean detach.
		return ctx.Err()
	}
	return errPrinted
}

// windowSize is the size of the terminal out is, or 0, 0 when it is not
// one.
func windowSize(out *os.File) (cols, rows int) {
	if out == nil {
		return 0, 0
	}
	cols, rows, err := term.GetSize(int(out.Fd()))
	if err != nil || cols == 0 || rows == 0 {
		return 0, 0
	}
	return cols, rows
}

// makeRaw puts the terminal fd in raw mode and returns how to restore it.
// golang.org/x/term does it as ssh and gh do (cfmakeraw's flags), in
// place of the copy of them agentctl kept.
func makeRaw(fd int) (func(), error) {
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, err
	}
	return func() { term.Restore(fd, old) }, nil
}

// parseDetachKeys reads --detach-keys as docker does: comma-separated
// keys, each a character or ctrl-X for X in a-z, @, [, \, ], ^ or _
// ("ctrl-p,ctrl-q"). The sequence, typed in order, detaches.
func parseDetachKeys(s string) ([]byte, error) {
	var seq []byte
	for _, k := range strings.Split(s, ",") {
		lower := strings.ToLower(k)
		switch {
		case len(k) == 1:
			seq = append(seq, k[0])
		case strings.HasPrefix(lower, "ctrl-") && len(k) == 6:
			c := lower[5]
			switch {
			case c >= 'a' && c <= 'z':
				seq = append(seq, c-'a'+1)
			case strings.IndexByte("@[\\]^_", c) >= 0:
				seq = append(seq, c-'@')
			default:
				return nil, usagef("--detach-keys %q: %q is not a key; give a character or ctrl-X for X in a-z, @, [, \\, ], ^, _ (such as ctrl-p,ctrl-q)", s, k)
			}
		default:
			return nil, usagef("--detach-keys %q: %q is not a key; give a character or ctrl-X for X in a-z, @, [, \\, ], ^, _ (such as ctrl-p,ctrl-q)", s, k)
		}
	}
	return seq, nil
}

// keyName is a detach key as a person types it: "Ctrl-]", "q".
func keyName(seq []byte) string {
	var names []string
	for _, c := range seq {
		if c < 0x20 {
			names = append(names, "Ctrl-"+string(rune(c+'@')))
		} else {
			names = append(names, string(rune(c)))
		}
	}
	return strings.Join(names, " ")
}

// detacher finds a detach sequence in the keys typed: it passes on what
// is not the sequence and holds back a prefix of it until the next key
// says whether the sequence goes on (docker's escape proxy does the same).
type detacher struct {
	seq     []byte
	matched int
}

// feed returns the keys to pass on and whether the sequence was typed.
func (d *detacher) feed(chunk []byte) (pass []byte, detach bool) {
	for _, c := range chunk {
		if c == d.seq[d.matched] {
			d.matched++
			if d.matched == len(d.seq) {
				return pass, true
			}
			continue
		}
		// Not the sequence after all: what was held back is keys.
		pass = append(pass, d.seq[:d.matched]...)
		d.matched = 0
		if c == d.seq[0] {
			d.matched = 1
			continue
		}
		pass = append(pass, c)
	}
	return pass, false
}
