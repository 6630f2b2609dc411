package mcpserver

import (
	"context"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockingPipe returns a pipe whose ends are blocking, as a client's
// spawn hands its server stdin (os.Pipe's are non-blocking already).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "client")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn() // not f.Fd(), which makes f blocking
	if err != nil {
		t.Fatal(err)
	}
	fl := 0
	if cerr := rc.Control(func(fd uintptr) { fl, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	return fl&unix.O_NONBLOCK != 0
}

// awaitBlocking waits until f's open file description is blocking again.
func awaitBlocking(t *testing.T, f *os.File, after string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); nonblocking(t, f); {
		if time.Now().After(deadline) {
			t.Fatalf("stdin still non-blocking 10 s after %s: a parent sharing the pipe would read EAGAIN", after)
		}
		time.Sleep(10 * time.Millisecond) // polling a flag, with a deadline
	}
}

// The server reads a piped stdin through the poller (non-blocking), and
// gives the pipe its blocking mode back when reading ends: at EOF, and
// when the SDK closes the connection first.
func TestStdinIsBlockingAgainWhenReadingEnds(t *testing.T) {
	for _, end := range []string{"EOF", "Close"} {
		t.Run(end, func(t *testing.T) {
			r, w := blockingPipe(t)
			tr := &lineTransport{r: r, w: io.Discard}
			conn, err := tr.Connect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.WriteString(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Read(context.Background()); err != nil {
				t.Fatalf("the ping: %v", err)
			}
			if !nonblocking(t, r) {
				t.Fatal("stdin is read blocking: its reads are not served by the poller")
			}
			if end == "EOF" {
				w.Close()
				// Collections while the server drains (the ping is
				// never answered: 5 s): once reading ends nothing else
				// refers to the duplicate, and a finalizer that closed
				// it first would leave the mode unrestored.
				stopGC := make(chan struct{})
				go func() {
					for {
						select {
						case <-stopGC:
							return
						default:
							runtime.GC()
							time.Sleep(10 * time.Millisecond) // pacing the collections
						}
					}
				}()
				defer close(stopGC)
				// The SDK reads on until the end.
				for {
					if _, err := conn.Read(context.Background()); err != nil {
						break
					}
				}
			} else {
				conn.Close()
			}
			awaitBlocking(t, r, end)
		})
	}
}

// A stdin that was non-blocking already stays so, and a terminal or file
// is read as it is.
func TestStdinKeepsANonBlockingModeItHad(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	in, restore := pollable(r)
	defer in.(*os.File).Close()
	restore()
	if !nonblocking(t, r) {
		t.Error("a stdin that was non-blocking was made blocking")
	}

	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if in, _ := pollable(f); in != io.Reader(f) {
		t.Error("a file on stdin was duplicated; it is read as it is")
	}
}
