package desktop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/BurntSushi/xgb"
	"github.com/BurntSushi/xgb/xproto"
	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/xselection"
)

// The worker's control socket: what a desktop keeps must live in its
// worker, which outlives agentd, not in agentd. Today that is the
// clipboard's text: the CLIPBOARD selection is owned by an X connection,
// and text set through agentd's own connection was gone when agentd
// restarted. The Manager hands the text to the worker over this socket
// (Desktop.Control, mode 0600 in the 0700 runtime directory, and the
// worker checks the caller's uid), and the worker owns the selection.
// One request per connection, one JSON line each way.

// ctlRequest is a request to the worker.
type ctlRequest struct {
	Op   string `json:"op"` // "clip_set", "wm_running", "await_wm"
	Text string `json:"text,omitempty"`
}

// ctlReply is its answer.
type ctlReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// ctlMaxBytes bounds a request: 64 KiB of clipboard text, escaped in
// JSON, with room to spare.
const ctlMaxBytes = 1 << 20

// ctlTimeout bounds one request on either side.
const ctlTimeout = 10 * time.Second

// listenControl opens the worker's control socket and serves it until the
// listener is closed (cleanup).
func (w *worker) listenControl() error {
	if w.spec.ControlPath == "" {
		return nil
	}
	os.Remove(w.spec.ControlPath) // one left by a killed worker of this name
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: w.spec.ControlPath, Net: "unix"})
	if err != nil {
		return fmt.Errorf("the desktop's control socket: %v", err)
	}
	if err := os.Chmod(w.spec.ControlPath, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("the desktop's control socket: %v", err)
	}
	w.ctl = l
	w.d.Control = w.spec.ControlPath
	go w.serveControl(l)
	return nil
}

func (w *worker) serveControl(l *net.UnixListener) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return // closed by cleanup
		}
		// Each on its own: an await_wm waits for the wm_running
		// that follows it.
		go w.handleControl(c)
	}
}

// handleControl answers one request.
func (w *worker) handleControl(c *net.UnixConn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(ctlTimeout))
	reply := func(err error) {
		r := ctlReply{OK: err == nil}
		if err != nil {
			r.Error = err.Error()
		}
		json.NewEncoder(c).Encode(r)
	}
	if err := sameUser(c); err != nil {
		reply(err)
		return
	}
	var req ctlRequest
	if err := json.NewDecoder(io.LimitReader(c, ctlMaxBytes)).Decode(&req); err != nil {
		reply(fmt.Errorf("bad request: %v", err))
		return
	}
	switch req.Op {
	case "clip_set":
		reply(w.clipSet([]byte(req.Text)))
	case "wm_running":
		// From the window manager's --startup command (wm.go); serve
		// records it.
		select {
		case w.wmRunning <- struct{}{}:
		default:
		}
		reply(nil)
	case "await_wm":
		// From an input batch (AwaitWindowManager).
		c.SetDeadline(time.Now().Add(wmStartWait + ctlTimeout))
		reply(w.awaitWM())
	default:
		reply(fmt.Errorf("unknown op %q", req.Op))
	}
}

// sameUser refuses a caller of another uid (the socket's mode already
// does; this holds if the mode were ever widened).
func sameUser(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if cerr != nil {
		return cerr
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("uid %d may not use this desktop", cred.Uid)
	}
	return nil
}

// clipSet makes text the desktop's clipboard, owned by the worker's own X
// connection (opened on the first set: an idle desktop holds none).
func (w *worker) clipSet(text []byte) error {
	w.clipMu.Lock()
	defer w.clipMu.Unlock()
	if w.clip != nil {
		select {
		case <-w.clip.done:
			w.clip = nil // the connection broke; open another
		default:
		}
	}
	if w.clip == nil {
		cb, err := openClipOwner(w.d.Display)
		if err != nil {
			return err
		}
		w.clip = cb
	}
	return w.clip.set(text)
}

// clipOwner owns a display's CLIPBOARD selection on the worker's own X
// connection and serves it as UTF-8 text (xselection.Owner, as pkg/capture's
// clipboard does for the person's display). It answers pastes until another
// program takes the selection or the worker ends.
type clipOwner struct {
	c     *xgb.Conn
	owner *xselection.Owner
	done  chan struct{} // closed when the event loop ends
}

// openClipOwner connects to display; xgb reads the cookie from
// $XAUTHORITY, which in the worker is the desktop's (worker.start sets it).
func openClipOwner(display string) (*clipOwner, error) {
	c, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("clipboard: connect to %s: %v", display, err)
	}
	fail := func(err error) (*clipOwner, error) {
		c.Close()
		return nil, fmt.Errorf("clipboard: %v", err)
	}
	root := xproto.Setup(c).DefaultScreen(c).Root
	win, err := xproto.NewWindowId(c)
	if err != nil {
		return fail(err)
	}
	if err := xproto.CreateWindowChecked(c, 0, win, root, 0, 0, 1, 1, 0, xproto.WindowClassInputOnly, 0, 0, nil).Check(); err != nil {
		return fail(err)
	}
	owner, err := xselection.New(c, win)
	if err != nil {
		return fail(err)
	}
	cb := &clipOwner{c: c, owner: owner, done: make(chan struct{})}
	go cb.loop()
	return cb, nil
}

// loop answers paste requests until the connection ends.
func (cb *clipOwner) loop() {
	defer close(cb.done)
	cb.owner.Serve(nil)
}

func (cb *clipOwner) set(text []byte) error {
	if err := cb.owner.Set(text); err != nil {
		return fmt.Errorf("clipboard: %v", err)
	}
	return nil
}

// ClipSet makes text the desktop's clipboard (CLIPBOARD, UTF-8 text). Its
// worker owns the selection, so the text outlives agentd as the desktop
// does. ErrNotFound for no such desktop; ErrUnavailable when it is not
// running, has no control socket (made by an agentd before this one), or
// its worker does not answer.
func (m *Manager) ClipSet(ctx context.Context, name, text string) error {
	d, err := m.Get(name)
	if err != nil {
		return err
	}
	if d.Status != StatusRunning {
		return errorf(ErrUnavailable, "desktop %q is %s; make another with agentctl desktop new", name, d.Status)
	}
	if d.Control == "" {
		return errorf(ErrUnavailable, "desktop %q was made by an older agentd and has no control socket; make another with agentctl desktop new", name)
	}
	r, err := askWorker(ctx, d.Control, ctlRequest{Op: "clip_set", Text: text})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errorf(ErrUnavailable, "desktop %q's worker: %v", name, err)
	}
	if !r.OK {
		return errorf(ErrUnavailable, "desktop %q: %s", name, r.Error)
	}
	return nil
}

// askWorker sends req to the worker listening on path and returns its
// reply.
func askWorker(ctx context.Context, path string, req ctlRequest) (ctlReply, error) {
	var r ctlReply
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "unix", path)
	if err != nil {
		return r, fmt.Errorf("it does not answer on %s: %v", path, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(ctlTimeout))
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if err = json.NewEncoder(c).Encode(req); err == nil {
		err = json.NewDecoder(io.LimitReader(c, ctlMaxBytes)).Decode(&r)
	}
	return r, err
}
