package main

import (
	"bytes"
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
	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/pkg/wire"
)

// detachKey ends an attach without touching the session: Ctrl-] (0x1d), the
// key telnet made familiar, which terminal programs rarely need.
const detachKey = 0x1d

func attachVerb() verb {
	var readOnly bool
	return verb{
		use: "attach NAME [--read-only]", summary: "an interactive terminal on a session; Ctrl-] detaches",
		args: exactArgs(1), complete: completeSession,
		interactive: "agentctl snapshot NAME --json gives the screen as data",
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&readOnly, "read-only", false, "watch without typing")
		},
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			return nil, attach(ctx, e, args[0], readOnly)
		},
	}
}

func attach(ctx context.Context, e *env, name string, readOnly bool) error {
	if readOnly {
		conn, _, err := wire.DialAttach(ctx, e.socket, wire.AttachParams{Name: name, ReadOnly: true})
		if err != nil {
			return err
		}
		return attachStream(ctx, e, name, conn, conn, nil, nil)
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
		resize := func(cols, rows int) {
			if c, err := e.dial(ctx); err == nil {
				c.Resize(ctx, wire.ResizeParams{Name: name, Cols: cols, Rows: rows})
			}
		}
		if cols > 0 {
			resize(cols, rows)
		}
		if conn, _, err = wire.DialAttach(ctx, e.socket, wire.AttachParams{Name: name}); err != nil {
			return err
		}
		return attachStream(ctx, e, name, conn, conn, winch, resize)
	}
	if err != nil {
		return err
	}
	framed := wire.NewAttachWriter(conn)
	return attachStream(ctx, e, name, conn, framed, winch, func(cols, rows int) { framed.Resize(cols, rows) })
}

// staleDaemon says whether err is an agentd that does not know the attach
// parameters this agentctl sends: it answers unknown fields as invalid.
func staleDaemon(err error) bool {
	var we *wire.Error
	return errors.As(err, &we) && we.Code == wire.CodeInvalidParams && strings.Contains(we.Message, "unknown field")
}

// attachStream runs an attach on conn: stdin's keys to keys until Ctrl-],
// conn's output to stdout, and resize at each SIGWINCH on winch (nil for
// none), until the session ends the stream, the user detaches or ctx ends.
func attachStream(ctx context.Context, e *env, name string, conn net.Conn, keys io.Writer, winch chan os.Signal, resize func(cols, rows int)) error {
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
	fmt.Fprintf(e.stderr, "[attached to %s; Ctrl-] detaches]\r\n", name)

	ended := make(chan struct{})
	go func() {
		io.Copy(e.stdout, conn)
		close(ended)
	}()
	detached := make(chan struct{})
	go func() {
		defer close(detached)
		buf := make([]byte, 4096)
		for {
			n, err := e.stdin.Read(buf)
			chunk := buf[:n]
			if i := bytes.IndexByte(chunk, detachKey); i >= 0 {
				keys.Write(chunk[:i])
				return
			}
			if n > 0 {
				if _, werr := keys.Write(chunk); werr != nil {
					return
				}
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
	ws, err := unix.IoctlGetWinsize(int(out.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 || ws.Row == 0 {
		return 0, 0
	}
	return int(ws.Col), int(ws.Row)
}

// makeRaw puts the terminal fd in raw mode and returns how to restore it.
func makeRaw(fd int) (func(), error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
