package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
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
		flags: func(fs *pflag.FlagSet) {
			fs.BoolVar(&readOnly, "read-only", false, "watch without typing")
		},
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			return nil, attach(ctx, e, args[0], readOnly)
		},
	}
}

func attach(ctx context.Context, e *env, name string, readOnly bool) error {
	in, _ := e.stdin.(*os.File)
	out, _ := e.stdout.(*os.File)
	// Input goes as attach frames, so the window's size travels with the
	// keys: the session is sized to this terminal before the first repaint
	// and again at each SIGWINCH, all on the one connection.
	p := wire.AttachParams{Name: name, ReadOnly: readOnly, FramedInput: !readOnly}
	if !readOnly {
		p.Cols, p.Rows = windowSize(out)
	}
	conn, _, err := wire.DialAttach(ctx, e.socket, p)
	if err != nil {
		return err
	}
	defer conn.Close()
	keys := io.Writer(conn)
	if !readOnly {
		framed := wire.NewAttachWriter(conn)
		keys = framed
		if p.Cols > 0 {
			winch := make(chan os.Signal, 1)
			signal.Notify(winch, syscall.SIGWINCH)
			defer signal.Stop(winch)
			go func() {
				for range winch {
					if cols, rows := windowSize(out); cols > 0 {
						framed.Resize(cols, rows)
					}
				}
			}()
		}
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
