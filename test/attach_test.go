package test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// TestAttachFollowsTheWindow: agentctl attach in a tmux pane sizes the
// session to the pane before the first repaint and follows the pane when
// it is resized, on the attach's own connection; judged by what the
// program itself reports (stty size) in the pane.
func TestAttachFollowsTheWindow(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	run := tmuxFor(t, h)
	h.startDaemon(nil)
	c := h.client()
	h.ctl(0, "spawn", "win", "--size", "80x24", "--env", "PS1=$ ", "--", "sh")
	run("new-session", "-d", "-x", "100", "-y", "30", bin.agentctl+" attach win; sleep 60")
	pane := func() string { return withoutBanner(run("capture-pane", "-p")) }
	await(t, 10*time.Second, "the session's prompt in the pane", func() bool {
		return strings.HasSuffix(strings.TrimSpace(pane()), "$")
	})
	run("send-keys", "stty size", "Enter")
	await(t, 10*time.Second, "stty size of the first window", func() bool { return strings.Contains(pane(), "30 100") })

	run("resize-window", "-x", "90", "-y", "20")
	await(t, 10*time.Second, "the session resized with the pane", func() bool {
		st := statusOf(t, c, "win")
		return st.Cols == 90 && st.Rows == 20
	})
	run("send-keys", "clear; stty size", "Enter")
	await(t, 10*time.Second, "stty size after the resize", func() bool { return strings.Contains(pane(), "20 90") })
}

// attachFramed attaches to name with framed input and returns the stream
// and a reader of everything it prints, collected in the background.
func attachFramed(t *testing.T, h *home, p wire.AttachParams) (net.Conn, *collector, *wire.AttachResult) {
	t.Helper()
	p.FramedInput = true
	conn, res, err := wire.DialAttach(context.Background(), h.socket, p)
	if err != nil {
		t.Fatalf("attach %s: %v", p.Name, err)
	}
	t.Cleanup(func() { conn.Close() })
	out := &collector{done: make(chan struct{})}
	go func() {
		io.Copy(out, conn)
		close(out.done)
	}()
	return conn, out, res
}

// collector is an attach's output so far; done closes when the stream
// ends.
type collector struct {
	syncBuffer
	done chan struct{}
}

// TestAttachFramedInput: keys and window sizes in one stream land in
// order: what is typed after a size sees it.
func TestAttachFramedInput(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	c := h.client()
	h.ctl(0, "spawn", "fr", "--size", "80x24", "--env", "PS1=$ ", "--", "sh")
	conn, out, res := attachFramed(t, h, wire.AttachParams{Name: "fr", Cols: 100, Rows: 30})
	if res.Cols != 100 || res.Rows != 30 {
		t.Errorf("attach answered %dx%d, want the size it asked for, 100x30", res.Cols, res.Rows)
	}
	w := wire.NewAttachWriter(conn)
	w.Write([]byte("stty size\r"))
	await(t, 10*time.Second, "the first size in the output", func() bool { return strings.Contains(out.String(), "30 100") })
	// The size goes after the keys before it, as a terminal's would: keys
	// the program has not read yet see the new size, so the test waits.
	w.Resize(70, 20)
	w.Write([]byte("stty size\r"))
	await(t, 10*time.Second, "the second size in the output", func() bool { return strings.Contains(out.String(), "20 70") })
	if st := statusOf(t, c, "fr"); st.Cols != 70 || st.Rows != 20 {
		t.Errorf("session size %dx%d after the window frame, want 70x20", st.Cols, st.Rows)
	}
	// Input longer than one frame arrives whole (out of canonical mode,
	// whose lines stop at 4095 bytes).
	w.Write([]byte("stty -icanon; echo re''ady; head -c 65636 | wc -c | sed 's/^/n=/'\r"))
	await(t, 10*time.Second, "the counter started", func() bool { return strings.Contains(out.String(), "ready") })
	w.Write(bytes.Repeat([]byte("x"), wire.MaxAttachFrame+100))
	// n= marks wc's answer: the echoed command line holds 65636 too.
	await(t, 10*time.Second, "the long input counted whole", func() bool { return strings.Contains(out.String(), "n=65636") })
}

// TestAttachFramedInputBadInput: a frame the daemon cannot take ends that
// attach with a line on its terminal naming the problem; the session and
// the daemon go on.
func TestAttachFramedInputBadInput(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	cl := h.client()
	h.ctl(0, "spawn", "bad", "--env", "PS1=$ ", "--", "sh")
	frame := func(kind byte, payload string) []byte { return wire.AppendAttachFrame(nil, kind, []byte(payload)) }
	huge := append([]byte{wire.AttachFrameInput}, binary.LittleEndian.AppendUint32(nil, 1<<30)...)
	for _, c := range []struct {
		name  string
		frame []byte
		want  string
	}{
		{"unknown kind", append([]byte{9}, frame(0, "hi")[1:]...), "kind 9 is not 0 (input) or 1 (window size)"},
		{"over the limit", huge, "a payload of 1073741824 bytes is over the limit of 65536"},
		{"window not JSON", frame(wire.AttachFrameWindow, "80x24"), `window size "80x24"`},
		{"window without rows", frame(wire.AttachFrameWindow, `{"cols":80}`), "cols and rows are both needed"},
		{"window too big", frame(wire.AttachFrameWindow, `{"cols":5000,"rows":24}`), "terminal size 5000x24 is not valid"},
	} {
		conn, out, _ := attachFramed(t, h, wire.AttachParams{Name: "bad"})
		conn.Write(c.frame)
		select {
		case <-out.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the attach did not end; it printed %q", c.name, out.String())
		}
		if got := out.String(); !strings.Contains(got, "[agentd: attach ended: ") || !strings.Contains(got, c.want) {
			t.Errorf("%s: the attacher's terminal ends with %q, want a line naming %q", c.name, tail(got, 200), c.want)
		}
		if st := statusOf(t, cl, "bad"); st.Status != wire.StatusRunning {
			t.Errorf("%s: session %s after the bad frame, want running", c.name, st.Status)
		}
	}
	if err := h.hello(); err != nil {
		t.Fatalf("daemon after bad frames: %v", err)
	}

	for _, c := range []struct {
		p    wire.AttachParams
		want string
	}{
		{wire.AttachParams{Name: "bad", ReadOnly: true, Cols: 80, Rows: 24}, "a read-only attach does not size the session"},
		{wire.AttachParams{Name: "bad", Cols: 80}, "cols 80 and rows 0: give both or neither"},
		{wire.AttachParams{Name: "bad", Cols: 0, Rows: 9000}, "give both or neither"},
		{wire.AttachParams{Name: "bad", Cols: 9000, Rows: 24}, "terminal size 9000x24 is not valid"},
	} {
		_, _, err := wire.DialAttach(context.Background(), h.socket, c.p)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeInvalidParams || !strings.Contains(we.Message, c.want) {
			t.Errorf("attach %+v: %v, want invalid_params naming %q", c.p, err, c.want)
		}
	}
}

// statusOf is the session's status, failing the test when there is none.
func statusOf(t *testing.T, c *wire.Client, name string) *wire.SessionStatus {
	t.Helper()
	st, err := c.Status(context.Background(), name)
	if err != nil {
		t.Fatalf("status %s: %v", name, err)
	}
	return st
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
