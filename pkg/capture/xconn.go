package capture

import (
	"context"
	"errors"
	"fmt"
	"image"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/BurntSushi/xgb"
	"github.com/BurntSushi/xgb/randr"
	"github.com/BurntSushi/xgb/shm"
	"github.com/BurntSushi/xgb/xproto"
	"golang.org/x/sys/unix"
)

// dialTimeout bounds connecting to the X socket; a local server answers at
// once, and a stuck one must not hold up the daemon.
const dialTimeout = 5 * time.Second

// Capture methods reported in Info and on every Shot.
const (
	MethodSHM      = "mit-shm"
	MethodGetImage = "getimage"
)

// xconn is one live connection to the X server with what was learnt about it
// at connect time. Requests go through enter/leave so that close never races
// a request (xgb panics on a request after its Close).
type xconn struct {
	c       *xgb.Conn
	sock    *xsock
	display string
	screen  int
	root    xproto.Window
	minKey  xproto.Keycode
	maxKey  xproto.Keycode

	pixelOK  bool   // 32-bit little-endian xRGB, the only layout the encoders read
	pixelWhy string // why not

	shmOK    bool
	shmWhy   string
	xtestOK  bool
	xtestWhy string
	xkbOK    bool
	randrOK  bool
	resOK    bool // X-Resource: which process owns a window (keyclient.go)

	atoms atoms

	// mappings counts MappingNotify events; the input side refreshes its
	// keymap when it changed.
	mappings atomic.Uint64

	use    sync.RWMutex
	closed bool
	events chan struct{} // closed when the event reader has exited

	capMu sync.Mutex // guards seg and the frames lent out from it
	seg   *shmSegment
}

type atoms struct {
	netActiveWindow, netWMName, utf8String, xkbRules, netClientList,
	netSupportingWMCheck, wmClass, wmName xproto.Atom
}

// shmSegment is the shared memory the server writes captures into.
type shmSegment struct {
	id   shm.Seg
	mem  []byte
	size int
}

// parseDisplay turns a DISPLAY value into a network, address, display and
// screen number.
func parseDisplay(display string) (network, addr string, num, screen int, err error) {
	colon := strings.LastIndex(display, ":")
	if colon < 0 {
		return "", "", 0, 0, fmt.Errorf("DISPLAY %q has no colon; use a value such as :0", display)
	}
	host, rest := display[:colon], display[colon+1:]
	if dot := strings.IndexByte(rest, '.'); dot >= 0 {
		if screen, err = strconv.Atoi(rest[dot+1:]); err != nil || screen < 0 {
			return "", "", 0, 0, fmt.Errorf("DISPLAY %q has a bad screen number; use a value such as :0", display)
		}
		rest = rest[:dot]
	}
	if num, err = strconv.Atoi(rest); err != nil || num < 0 {
		return "", "", 0, 0, fmt.Errorf("DISPLAY %q has a bad display number; use a value such as :0", display)
	}
	host = strings.TrimPrefix(host, "unix/")
	switch {
	case strings.HasPrefix(host, "/"):
		return "unix", display[:colon], num, screen, nil
	case host == "" || host == "unix":
		return "unix", "/tmp/.X11-unix/X" + strconv.Itoa(num), num, screen, nil
	default:
		host = strings.TrimPrefix(host, "tcp/")
		return "tcp", net.JoinHostPort(host, strconv.Itoa(6000+num)), num, screen, nil
	}
}

// dialXSock connects to display (network and addr, display number num, as
// parseDisplay reads it) with the cookie from the Xauthority file authority
// ("" is $XAUTHORITY), over an xsock, the handshake bounded by dialTimeout.
func dialXSock(display, network, addr string, num int, authority string) (*xgb.Conn, *xsock, error) {
	nc, err := net.DialTimeout(network, addr, dialTimeout)
	if err != nil {
		return nil, nil, fmt.Errorf("no X server at DISPLAY %s: %w", display, err)
	}
	name, cookie := xauthCookieFrom(authority, num)
	sock := newXSock(nc, name, cookie)
	_ = nc.SetDeadline(time.Now().Add(dialTimeout))
	c, err := xgb.NewConnNet(sock)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("X server at DISPLAY %s refused the connection: %w", display, err)
	}
	_ = nc.SetDeadline(time.Time{})
	return c, sock, nil
}

// dialXAuth connects to display with the cookie from the Xauthority file
// authority ("" is $XAUTHORITY) and learns what the server offers.
func dialXAuth(display, authority string) (*xconn, error) {
	network, addr, num, screenNum, err := parseDisplay(display)
	if err != nil {
		return nil, err
	}
	c, sock, err := dialXSock(display, network, addr, num, authority)
	if err != nil {
		return nil, err
	}
	x := &xconn{c: c, sock: sock, display: display, screen: screenNum, events: make(chan struct{})}
	go x.readEvents()
	go x.watchdog()
	if err := x.setup(network); err != nil {
		x.close()
		return nil, err
	}
	return x, nil
}

// Liveness of the X server (see watchdog).
const (
	pingEvery = time.Second
	hungAfter = 3 * time.Second
)

// watchdog kills the connection when the server stops answering. xgb's
// replies have no deadline, so every caller of a hung server (stopped, or
// alive but wedged) would otherwise wait forever. Once a second, when
// requests are unanswered, it makes a round trip of its own and gives it
// hungAfter; a live server answers in milliseconds even on a busy machine.
// Killing answers every request in flight with an error (see xsock), and
// the Screen dials a new connection. It ends with the connection.
func (x *xconn) watchdog() {
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-x.sock.Dead():
			return
		case <-t.C:
		}
		if !x.sock.unanswered() || !x.use.TryRLock() {
			continue
		}
		if x.closed {
			x.use.RUnlock()
			return
		}
		kill := time.AfterFunc(hungAfter, func() { x.sock.Kill(errXHung) })
		_, _ = xproto.GetInputFocus(x.c).Reply()
		kill.Stop()
		x.use.RUnlock()
	}
}

func (x *xconn) setup(network string) error {
	setup := xproto.Setup(x.c)
	if setup == nil || x.screen >= len(setup.Roots) {
		return fmt.Errorf("X server at DISPLAY %s has no screen %d", x.display, x.screen)
	}
	scr := setup.Roots[x.screen]
	x.root = scr.Root
	x.minKey, x.maxKey = setup.MinKeycode, setup.MaxKeycode
	x.pixelOK, x.pixelWhy = pixelFormat(setup, &scr)

	shmOK, xtestOK, randrOK, xkbOK := x.extension("MIT-SHM"), x.extension("XTEST"), x.extension("RANDR"), x.extension("XKEYBOARD")
	switch {
	case network != "unix":
		x.shmWhy = "the display is reached over TCP, shared memory needs a local server; using GetImage"
	case !shmOK:
		x.shmWhy = "the X server does not offer MIT-SHM; using GetImage"
	default:
		x.shmOK = true
		x.shmWhy = "the X server offers MIT-SHM and the display is local"
	}
	if xtestOK {
		x.xtestOK = true
		x.xtestWhy = "XTEST fakes input on the server"
	} else {
		x.xtestWhy = "the X server does not offer XTEST; input is impossible"
	}
	x.randrOK, x.xkbOK = randrOK, xkbOK
	x.resOK = network == "unix" && x.extension("X-Resource")
	names := []string{"_NET_ACTIVE_WINDOW", "_NET_WM_NAME", "UTF8_STRING", "_XKB_RULES_NAMES",
		"_NET_CLIENT_LIST", "_NET_SUPPORTING_WM_CHECK", "WM_CLASS", "WM_NAME"}
	cookies := make([]xproto.InternAtomCookie, len(names))
	for i, n := range names {
		cookies[i] = xproto.InternAtom(x.c, false, uint16(len(n)), n)
	}
	got := make([]xproto.Atom, len(names))
	for i, ck := range cookies {
		r, err := ck.Reply()
		if err != nil {
			return x.fail(err)
		}
		got[i] = r.Atom
	}
	x.atoms = atoms{got[0], got[1], got[2], got[3], got[4], got[5], got[6], got[7]}
	return nil
}

// extension asks whether the server offers an extension and registers its
// opcode on the connection. It stands in for the xgb extension packages'
// Init, which writes process-wide maps without locks (see xsock.parse).
func (x *xconn) extension(name string) bool {
	r, err := xproto.QueryExtension(x.c, uint16(len(name)), name).Reply()
	if err != nil || !r.Present {
		return false
	}
	x.c.ExtLock.Lock()
	x.c.Extensions[name] = r.MajorOpcode
	x.c.ExtLock.Unlock()
	return true
}

// pixelFormat checks that root-depth images are 32 bits per pixel, little
// endian, red in bits 16-23: what every X server on a PC uses and what the
// encoders read without conversion.
func pixelFormat(setup *xproto.SetupInfo, scr *xproto.ScreenInfo) (bool, string) {
	bpp := 0
	for _, f := range setup.PixmapFormats {
		if f.Depth == scr.RootDepth {
			bpp = int(f.BitsPerPixel)
		}
	}
	if bpp != 32 || (scr.RootDepth != 24 && scr.RootDepth != 32) {
		return false, fmt.Sprintf("the screen has depth %d with %d bits per pixel; screenshots need depth 24 or 32 at 32 bits per pixel", scr.RootDepth, bpp)
	}
	if setup.ImageByteOrder != xproto.ImageOrderLSBFirst {
		return false, "the X server sends images most significant byte first; screenshots need a little-endian server"
	}
	for _, d := range scr.AllowedDepths {
		for _, v := range d.Visuals {
			if v.VisualId == scr.RootVisual && (v.RedMask != 0xff0000 || v.GreenMask != 0xff00 || v.BlueMask != 0xff) {
				return false, "the root visual is not 8-bit RGB; screenshots need a TrueColor visual with red in the high byte"
			}
		}
	}
	return true, ""
}

// readEvents drains the connection's events (xgb stalls every reply when its
// event queue fills) and counts keyboard mapping changes. It exits when the
// connection is closed.
func (x *xconn) readEvents() {
	defer close(x.events)
	for {
		ev, err := x.c.WaitForEvent()
		if ev == nil && err == nil {
			return
		}
		if _, ok := ev.(xproto.MappingNotifyEvent); ok {
			x.mappings.Add(1)
		}
	}
}

// enter guards a use of the connection against close.
func (x *xconn) enter() error {
	x.use.RLock()
	if x.closed {
		x.use.RUnlock()
		return fmt.Errorf("%w: the X connection is closed", ErrUnavailable)
	}
	return nil
}

func (x *xconn) leave() { x.use.RUnlock() }

// alive reports whether the socket still works.
func (x *xconn) alive() bool {
	select {
	case <-x.sock.Dead():
		return false
	default:
		return true
	}
}

// errXHung is why a connection was killed by guard or the watchdog.
var errXHung = errors.New("it stopped answering")

// guard kills the connection when ctx ends and release has not been called
// within grace. A hung X server (stopped, or alive but not answering) would
// otherwise hold the caller in a round trip forever, since xgb's replies
// have no deadline. Killing the socket answers every request in flight with
// an error at once (see xsock), and the Screen dials a new connection.
func (x *xconn) guard(ctx context.Context, grace time.Duration) (release func()) {
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			x.sock.Kill(errXHung)
		}
	})
	return func() {
		stop()
		close(done)
	}
}

// fail turns an error from a request into ErrUnavailable when the server has
// gone away, and names the request otherwise.
func (x *xconn) fail(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(x.sock.Err(), errXHung) {
		return fmt.Errorf("%w: the X server at DISPLAY %s stopped answering; the connection is replaced", ErrUnavailable, x.display)
	}
	if !x.alive() {
		return fmt.Errorf("%w: the X server at DISPLAY %s went away (%v)", ErrUnavailable, x.display, x.sock.Err())
	}
	return fmt.Errorf("X request failed: %v", err)
}

// close releases the shared memory and the connection. It waits for requests
// in flight, which end quickly even when the server is gone (see xsock).
func (x *xconn) close() {
	x.use.Lock()
	defer x.use.Unlock()
	if x.closed {
		return
	}
	x.closed = true
	x.capMu.Lock()
	if x.seg != nil {
		if x.alive() {
			_ = shm.DetachChecked(x.c, x.seg.id).Check()
		}
		_ = unix.SysvShmDetach(x.seg.mem)
		x.seg = nil
	}
	x.capMu.Unlock()
	// Close through a dead socket: xgb's own Close races with its reader
	// on a live connection (see xsock.drained).
	x.sock.Kill(net.ErrClosed)
	x.sock.drained()
	x.c.Close()
	<-x.events
}

// screenRect returns the current size of the root window.
func (x *xconn) screenRect() (image.Rectangle, error) {
	g, err := xproto.GetGeometry(x.c, xproto.Drawable(x.root)).Reply()
	if err != nil || !x.alive() {
		return image.Rectangle{}, x.fail(errors.Join(err, errors.New("get geometry")))
	}
	return image.Rect(0, 0, int(g.Width), int(g.Height)), nil
}

// ensureSegment makes the shared memory segment at least size bytes. On
// failure MIT-SHM is switched off for this connection with the reason.
// Called with capMu held.
func (x *xconn) ensureSegment(size int) bool {
	if !x.shmOK {
		return false
	}
	if x.seg != nil && x.seg.size >= size {
		return true
	}
	if x.seg != nil {
		_ = shm.DetachChecked(x.c, x.seg.id).Check()
		_ = unix.SysvShmDetach(x.seg.mem)
		x.seg = nil
	}
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600)
	if err != nil {
		x.shmOK, x.shmWhy = false, fmt.Sprintf("creating a shared memory segment failed (%v); using GetImage", err)
		return false
	}
	// Marked for removal at once: it disappears when both sides detach,
	// even if the daemon is killed.
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	mem, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		x.shmOK, x.shmWhy = false, fmt.Sprintf("attaching the shared memory segment failed (%v); using GetImage", err)
		return false
	}
	seg, err := shm.NewSegId(x.c)
	if err == nil {
		err = shm.AttachChecked(x.c, seg, uint32(id), false).Check()
	}
	if err != nil {
		_ = unix.SysvShmDetach(mem)
		if !x.alive() {
			return false
		}
		x.shmOK, x.shmWhy = false, fmt.Sprintf("the X server could not attach our shared memory (%v), it may run in another IPC namespace; using GetImage", err)
		return false
	}
	x.seg = &shmSegment{id: seg, mem: mem, size: size}
	return true
}

// frame is a captured rectangle of the screen, 4 bytes per pixel in the
// server's little-endian xRGB order (B, G, R, x in memory).
type frame struct {
	pix    []byte
	stride int
	rect   image.Rectangle // on the screen
	method string
}

// grab captures r. The frame may live in shared memory: call release when
// done with it, and do not keep pix after.
func (x *xconn) grab(r image.Rectangle) (frame, func(), error) {
	if !x.pixelOK {
		return frame{}, nil, fmt.Errorf("%w: %s", ErrUnavailable, x.pixelWhy)
	}
	w, h := r.Dx(), r.Dy()
	size := w * h * 4
	x.capMu.Lock()
	if x.ensureSegment(size) {
		rep, err := shm.GetImage(x.c, xproto.Drawable(x.root), int16(r.Min.X), int16(r.Min.Y), uint16(w), uint16(h),
			0xffffffff, xproto.ImageFormatZPixmap, x.seg.id, 0).Reply()
		if err != nil || !x.alive() {
			x.capMu.Unlock()
			return frame{}, nil, x.fail(errors.Join(err, errors.New("shm get image")))
		}
		_ = rep
		return frame{pix: x.seg.mem[:size], stride: w * 4, rect: r, method: MethodSHM}, x.capMu.Unlock, nil
	}
	x.capMu.Unlock()
	rep, err := xproto.GetImage(x.c, xproto.ImageFormatZPixmap, xproto.Drawable(x.root), int16(r.Min.X), int16(r.Min.Y),
		uint16(w), uint16(h), 0xffffffff).Reply()
	if err != nil || !x.alive() {
		return frame{}, nil, x.fail(errors.Join(err, errors.New("get image")))
	}
	if len(rep.Data) < size {
		return frame{}, nil, fmt.Errorf("X server sent %d bytes for a %dx%d image", len(rep.Data), w, h)
	}
	return frame{pix: rep.Data[:size], stride: w * 4, rect: r, method: MethodGetImage}, func() {}, nil
}

// monitors lists the active CRTCs through RandR, or the whole screen when
// RandR is missing or reports none.
func (x *xconn) monitors(screen image.Rectangle) []Monitor {
	var mons []Monitor
	if x.randrOK {
		res, err := randr.GetScreenResourcesCurrent(x.c, x.root).Reply()
		if err == nil {
			for _, crtc := range res.Crtcs {
				ci, err := randr.GetCrtcInfo(x.c, crtc, res.ConfigTimestamp).Reply()
				if err != nil || ci.Width == 0 || ci.Height == 0 || len(ci.Outputs) == 0 {
					continue
				}
				name := ""
				if oi, err := randr.GetOutputInfo(x.c, ci.Outputs[0], res.ConfigTimestamp).Reply(); err == nil {
					name = string(oi.Name)
				}
				r := image.Rect(int(ci.X), int(ci.Y), int(ci.X)+int(ci.Width), int(ci.Y)+int(ci.Height)).Intersect(screen)
				if r.Empty() {
					continue
				}
				mons = append(mons, Monitor{Name: name, X: r.Min.X, Y: r.Min.Y, Width: r.Dx(), Height: r.Dy()})
			}
		}
	}
	if len(mons) == 0 {
		mons = []Monitor{{Name: "screen", Width: screen.Dx(), Height: screen.Dy()}}
	}
	for i := range mons {
		mons[i].Index = i
	}
	return mons
}

// windowText reads a text property (UTF8_STRING or Latin-1 STRING).
func (x *xconn) windowText(w xproto.Window, prop xproto.Atom) string {
	r, err := xproto.GetProperty(x.c, false, w, prop, xproto.GetPropertyTypeAny, 0, 1024).Reply()
	if err != nil || r.Format != 8 {
		return ""
	}
	if r.Type == x.atoms.utf8String {
		return string(r.Value)
	}
	runes := make([]rune, len(r.Value))
	for i, b := range r.Value {
		runes[i] = rune(b)
	}
	return string(runes)
}

// windowTitle is _NET_WM_NAME, or WM_NAME when that is missing.
func (x *xconn) windowTitle(w xproto.Window) string {
	if t := x.windowText(w, x.atoms.netWMName); t != "" {
		return t
	}
	return x.windowText(w, xproto.AtomWmName)
}

// activeWindow is the window the window manager marks active, or without
// an EWMH window manager the window holding the input focus (or its nearest
// ancestor with a title).
func (x *xconn) activeWindow() (xproto.Window, string) {
	r, err := xproto.GetProperty(x.c, false, x.root, x.atoms.netActiveWindow, xproto.AtomWindow, 0, 1).Reply()
	if err == nil && r.Format == 32 && len(r.Value) >= 4 {
		w := xproto.Window(xgb.Get32(r.Value))
		if w != 0 {
			return w, x.windowTitle(w)
		}
	}
	f, err := xproto.GetInputFocus(x.c).Reply()
	if err != nil || f.Focus == xproto.InputFocusNone || f.Focus == xproto.InputFocusPointerRoot || f.Focus == x.root {
		return 0, ""
	}
	for w := f.Focus; w != 0 && w != x.root; {
		if t := x.windowTitle(w); t != "" {
			return w, t
		}
		q, err := xproto.QueryTree(x.c, w).Reply()
		if err != nil {
			break
		}
		w = q.Parent
	}
	return f.Focus, ""
}

// pointer returns the pointer position on the screen.
func (x *xconn) pointer() (image.Point, uint16, error) {
	return x.pointerAnswer(xproto.QueryPointer(x.c, x.root))
}

// pointerAnswer waits for the answer to a pointer query sent before: the
// position on the screen and the buttons and modifiers held.
func (x *xconn) pointerAnswer(c xproto.QueryPointerCookie) (image.Point, uint16, error) {
	p, err := c.Reply()
	if err != nil || !x.alive() {
		return image.Point{}, 0, x.fail(errors.Join(err, errors.New("query pointer")))
	}
	return image.Pt(int(p.RootX), int(p.RootY)), p.Mask, nil
}

// keyboardLayout reads the _XKB_RULES_NAMES root property that setxkbmap and
// the X server set: rules, model, layout, variant, options.
func (x *xconn) keyboardLayout() (layout, variant string) {
	r, err := xproto.GetProperty(x.c, false, x.root, x.atoms.xkbRules, xproto.GetPropertyTypeAny, 0, 1024).Reply()
	if err != nil || r.Format != 8 {
		return "", ""
	}
	parts := strings.Split(string(r.Value), "\x00")
	if len(parts) > 2 {
		layout = parts[2]
	}
	if len(parts) > 3 {
		variant = parts[3]
	}
	return layout, variant
}

// sync makes a round trip, so every request sent before it has been
// processed by the server.
func (x *xconn) sync() error {
	_, err := xproto.GetInputFocus(x.c).Reply()
	if err != nil || !x.alive() {
		return x.fail(errors.Join(err, errors.New("sync")))
	}
	return nil
}

var _ = os.Getpid
