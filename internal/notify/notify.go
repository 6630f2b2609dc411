package notify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/agentd/agentd/internal/errkind"
)

// The errors of the package; test them with errors.Is.
var (
	// ErrNoSessionBus: there is no session bus to reach (no
	// $DBUS_SESSION_BUS_ADDRESS, or nothing answers at it), so there are
	// no desktop notifications.
	ErrNoSessionBus = errkind.New(errkind.Unavailable, "no session bus")
	// ErrNoServer: the session bus has no notification server
	// (org.freedesktop.Notifications has no owner and none can be started).
	ErrNoServer = errkind.New(errkind.Unavailable, "no notification server on the session bus")
	// ErrTimeout: the bus or the server did not answer within
	// Options.CallTimeout.
	ErrTimeout = errkind.New(errkind.Timeout, "the notification server did not answer in time")
	// ErrInvalid: the notification itself is wrong (an empty summary, a
	// repeated action key...).
	ErrInvalid = errkind.New(errkind.Invalid, "invalid notification")
	// ErrShutdown: the Notifier was shut down.
	ErrShutdown = errkind.New(errkind.InvalidStatus, "the notifier is shut down")
)

// The names of the specification.
const (
	busName   = "org.freedesktop.Notifications"
	objPath   = dbus.ObjectPath("/org/freedesktop/Notifications")
	iface     = "org.freedesktop.Notifications"
	sigAction = "ActionInvoked"
	sigClosed = "NotificationClosed"
)

// DefaultCallTimeout is Options.CallTimeout when none is given: a server
// answers Notify in about a millisecond; past a second it is hung or
// starting, and a state change must not wait for it.
const DefaultCallTimeout = time.Second

// eventBuffer is how many events wait for the reader before more are
// dropped (and counted by Dropped); the reader is one loop in the daemon.
const eventBuffer = 64

// maxTracked bounds the notifications remembered for their events; a
// server that never reports their end must not grow the map without end.
const maxTracked = 1024

// Options configure a Notifier.
type Options struct {
	// Address is the bus address; "" means $DBUS_SESSION_BUS_ADDRESS.
	Address string
	// CallTimeout bounds every call, connecting included
	// (DefaultCallTimeout when 0).
	CallTimeout time.Duration
}

// EventKind says what an Event reports.
type EventKind uint8

// The kinds of events.
const (
	// ActionInvoked: the person picked the action Event.ActionKey of
	// notification Event.ID.
	ActionInvoked EventKind = iota + 1
	// Closed: notification Event.ID is gone, for Event.Reason.
	Closed
	// BusLost: the connection to the bus ended; notifications sent before
	// report nothing more (Event.Err says why).
	BusLost
)

func (k EventKind) String() string {
	switch k {
	case ActionInvoked:
		return "action"
	case Closed:
		return "closed"
	case BusLost:
		return "bus-lost"
	}
	return "unknown(" + strconv.Itoa(int(k)) + ")"
}

// CloseReason is why a notification closed, as the server says.
type CloseReason uint32

// The reasons of the specification.
const (
	Expired   CloseReason = 1
	Dismissed CloseReason = 2 // by the person
	ByCall    CloseReason = 3 // by CloseNotification
	Undefined CloseReason = 4
)

func (r CloseReason) String() string {
	switch r {
	case Expired:
		return "expired"
	case Dismissed:
		return "dismissed"
	case ByCall:
		return "closed"
	case Undefined:
		return "undefined"
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Event is something the server reported about a notification this
// Notifier sent, or the loss of the bus.
type Event struct {
	Kind      EventKind
	ID        uint32
	ActionKey string      // for ActionInvoked
	Reason    CloseReason // for Closed
	Err       error       // for BusLost
}

// ServerInfo is what GetServerInformation returns.
type ServerInfo struct {
	Name, Vendor, Version, SpecVersion string
}

// Notifier sends notifications and reports their events. It is safe for
// concurrent use.
//
// Lock order: mu only; no call on the bus is made under it, except
// adding the match rules of a new connection (bounded by the call's
// timeout).
type Notifier struct {
	addr    string
	timeout time.Duration
	events  chan Event
	dropped atomic.Uint64

	pumps sync.WaitGroup // the signal goroutines, one per connection made

	mu      sync.Mutex
	conn    *dbus.Conn
	dialing *dialing          // a connection being made, else nil
	sent    map[uint32]string // id → unique name of the server it went to
	shut    bool
}

// New returns a Notifier for the session bus, or an error wrapping
// ErrNoSessionBus when there is none to reach; it does not connect (the
// first call does), so it never blocks.
func New(opts Options) (*Notifier, error) {
	addr := opts.Address
	if addr == "" {
		addr = os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	}
	if addr == "" {
		return nil, fmt.Errorf("%w: $DBUS_SESSION_BUS_ADDRESS is not set (a desktop session sets it; desktop notifications are off)", ErrNoSessionBus)
	}
	timeout := opts.CallTimeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	return &Notifier{
		addr:    addr,
		timeout: timeout,
		events:  make(chan Event, eventBuffer),
		sent:    make(map[uint32]string),
	}, nil
}

// Address is the bus address the Notifier uses.
func (n *Notifier) Address() string { return n.addr }

// Events delivers the events of the notifications this Notifier sent, and
// BusLost. It is closed by Shutdown. A reader that falls eventBuffer
// events behind loses the newer ones (see Dropped): the signal goroutine
// never waits for it.
func (n *Notifier) Events() <-chan Event { return n.events }

// Dropped is how many events were lost because Events was not read.
func (n *Notifier) Dropped() uint64 { return n.dropped.Load() }

// Notify shows msg and returns its id (msg.Replaces when that notification
// still exists, else a new one). Errors wrap ErrInvalid, ErrNoSessionBus,
// ErrNoServer, ErrTimeout or ErrShutdown, or the caller's context's error,
// or are the server's. A hung server that recovers after a timeout may
// still show the notification; its id is unknown, so it reports nothing.
func (n *Notifier) Notify(ctx context.Context, msg Notification) (uint32, error) {
	a, err := msg.args()
	if err != nil {
		return 0, err
	}
	ctx, cancel := n.bound(ctx)
	defer cancel()
	conn, err := n.connection(ctx)
	if err != nil {
		return 0, err
	}
	// The server's unique name: only its signals are believed.
	var owner string
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetNameOwner", 0, busName).Store(&owner); err != nil {
		// No owner yet is fine when the bus can start one (activation);
		// Notify then says whether it could.
		var derr dbus.Error
		if !errors.As(err, &derr) || derr.Name != "org.freedesktop.DBus.Error.NameHasNoOwner" {
			if n.timedOut(ctx) {
				// The bus daemon itself does not answer. Drop the
				// connection: calls to a bus that reads nothing would
				// fill the socket and block in write, past any
				// timeout; the next call connects again, bounded.
				conn.Close() // its pump reports BusLost
			}
			return 0, n.callError(ctx, "GetNameOwner", err)
		}
	}
	var id uint32
	err = conn.Object(busName, objPath).CallWithContext(ctx, iface+".Notify", 0,
		a.app, a.replaces, a.icon, a.summary, a.body, a.actions, a.hints, a.timeout).Store(&id)
	if err != nil {
		return 0, n.callError(ctx, "Notify", err)
	}
	if owner == "" {
		// Started by activation just now: ask again.
		_ = conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetNameOwner", 0, busName).Store(&owner)
	}
	n.mu.Lock()
	if n.conn == conn {
		if _, ok := n.sent[id]; !ok && len(n.sent) >= maxTracked {
			for old := range n.sent {
				delete(n.sent, old)
				break
			}
		}
		n.sent[id] = owner
	}
	n.mu.Unlock()
	return id, nil
}

// Close closes notification id (CloseNotification); the server then
// reports Closed with reason ByCall. Closing one that is already gone is
// not an error.
func (n *Notifier) Close(ctx context.Context, id uint32) error {
	ctx, cancel := n.bound(ctx)
	defer cancel()
	conn, err := n.connection(ctx)
	if err != nil {
		return err
	}
	if err := conn.Object(busName, objPath).CallWithContext(ctx, iface+".CloseNotification", 0, id).Err; err != nil {
		return n.callError(ctx, "CloseNotification", err)
	}
	return nil
}

// Capabilities returns the server's capabilities (GetCapabilities), such
// as "actions" (it shows actions), "body" and "body-markup".
func (n *Notifier) Capabilities(ctx context.Context) ([]string, error) {
	ctx, cancel := n.bound(ctx)
	defer cancel()
	conn, err := n.connection(ctx)
	if err != nil {
		return nil, err
	}
	var caps []string
	if err := conn.Object(busName, objPath).CallWithContext(ctx, iface+".GetCapabilities", 0).Store(&caps); err != nil {
		return nil, n.callError(ctx, "GetCapabilities", err)
	}
	return caps, nil
}

// ServerInformation returns the server's name, vendor and versions
// (GetServerInformation), for doctor.
func (n *Notifier) ServerInformation(ctx context.Context) (ServerInfo, error) {
	ctx, cancel := n.bound(ctx)
	defer cancel()
	conn, err := n.connection(ctx)
	if err != nil {
		return ServerInfo{}, err
	}
	var s ServerInfo
	if err := conn.Object(busName, objPath).CallWithContext(ctx, iface+".GetServerInformation", 0).
		Store(&s.Name, &s.Vendor, &s.Version, &s.SpecVersion); err != nil {
		return ServerInfo{}, n.callError(ctx, "GetServerInformation", err)
	}
	return s, nil
}

// Shutdown closes the connection, waits for its signal goroutine to end
// and closes Events. Calls after it fail with ErrShutdown; a second
// Shutdown does nothing.
func (n *Notifier) Shutdown() error {
	n.mu.Lock()
	if n.shut {
		n.mu.Unlock()
		return nil
	}
	n.shut = true
	conn := n.conn
	n.conn = nil
	n.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
	// A dial under way sees shut and closes its connection.
	n.pumps.Wait()
	close(n.events)
	return nil
}

// connection returns the live connection, connecting (again) when there
// is none, within ctx. One caller dials; the others wait for it, each no
// longer than its own ctx.
func (n *Notifier) connection(ctx context.Context) (*dbus.Conn, error) {
	n.mu.Lock()
	for {
		if n.shut {
			n.mu.Unlock()
			return nil, ErrShutdown
		}
		if n.conn != nil && n.conn.Connected() {
			conn := n.conn
			n.mu.Unlock()
			return conn, nil
		}
		if n.dialing == nil {
			break
		}
		d := n.dialing
		n.mu.Unlock()
		select {
		case <-d.done:
			if d.err != nil {
				return nil, d.err
			}
		case <-ctx.Done():
			return nil, n.ctxError(ctx, "connect to "+n.addr)
		}
		n.mu.Lock()
	}
	if n.conn != nil {
		// Lost: its pump reports it and ends.
		n.conn.Close()
		n.conn = nil
		clear(n.sent)
	}
	d := &dialing{done: make(chan struct{})}
	n.dialing = d
	n.mu.Unlock()

	conn, err := n.dial(ctx)
	if err == nil {
		if err = subscribe(ctx, conn); err != nil {
			conn.Close()
			conn, err = nil, n.callError(ctx, "AddMatch", err)
		}
	}

	n.mu.Lock()
	defer n.mu.Unlock()
	n.dialing = nil
	d.err = err
	close(d.done)
	if err != nil {
		return nil, err
	}
	if n.shut {
		conn.Close()
		return nil, ErrShutdown
	}
	signals := make(chan *dbus.Signal, eventBuffer)
	conn.Signal(signals)
	n.conn = conn
	n.pumps.Add(1)
	go n.pump(conn, signals)
	return conn, nil
}

// dialing is a connection being made; done is closed when it is made or
// failed (err).
type dialing struct {
	done chan struct{}
	err  error
}

// dial connects and authenticates within ctx. godbus's Dial, Auth and
// Hello take no context, so they run in a goroutine: past ctx, closing the
// connection ends Auth and Hello at once; a connect(2) that hangs (a
// listening socket whose backlog is full) ends when the kernel gives up,
// and the goroutine then closes what it made and ends.
func (n *Notifier) dial(ctx context.Context) (*dbus.Conn, error) {
	type result struct {
		conn *dbus.Conn
		err  error
	}
	var (
		mu        sync.Mutex
		made      *dbus.Conn // once dialled, for the waiter to close
		abandoned bool
	)
	done := make(chan result, 1)
	go func() {
		conn, err := dbus.Dial(n.addr)
		if err != nil {
			done <- result{err: fmt.Errorf("%w: nothing answers at %s (%v); is the desktop session's bus running?", ErrNoSessionBus, n.addr, err)}
			return
		}
		mu.Lock()
		if abandoned {
			mu.Unlock()
			conn.Close()
			done <- result{err: context.DeadlineExceeded}
			return
		}
		made = conn
		mu.Unlock()
		err = conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))})
		if err == nil {
			err = conn.Hello()
		}
		if err != nil {
			conn.Close()
			done <- result{err: fmt.Errorf("%w: %s refused the connection: %v", ErrNoSessionBus, n.addr, err)}
			return
		}
		done <- result{conn: conn}
	}()
	select {
	case r := <-done:
		return r.conn, r.err
	case <-ctx.Done():
		mu.Lock()
		abandoned = true
		conn := made
		mu.Unlock()
		if conn != nil {
			conn.Close()
			if r := <-done; r.conn != nil {
				r.conn.Close() // Hello answered just before the close
			}
		}
		return nil, n.ctxError(ctx, "connect to "+n.addr)
	}
}

// subscribe adds the match rules for the server's two signals.
func subscribe(ctx context.Context, conn *dbus.Conn) error {
	for _, member := range []string{sigAction, sigClosed} {
		if err := conn.AddMatchSignalContext(ctx,
			dbus.WithMatchObjectPath(objPath),
			dbus.WithMatchInterface(iface),
			dbus.WithMatchMember(member)); err != nil {
			return err
		}
	}
	return nil
}

// pump turns conn's signals into events until conn closes; godbus closes
// signals then. Shutdown waits for every pump before it closes Events.
func (n *Notifier) pump(conn *dbus.Conn, signals <-chan *dbus.Signal) {
	defer n.pumps.Done()
	for sig := range signals {
		if ev, ok := n.event(conn, sig); ok {
			n.deliver(ev)
		}
	}
	n.mu.Lock()
	lost := !n.shut
	if n.conn == conn {
		n.conn = nil
		clear(n.sent)
	}
	n.mu.Unlock()
	if lost {
		n.deliver(Event{Kind: BusLost, Err: fmt.Errorf("%w: the connection to %s ended", ErrNoSessionBus, n.addr)})
	}
}

// event makes an Event of sig when it is one of the server's signals about
// a notification this Notifier sent on conn.
func (n *Notifier) event(conn *dbus.Conn, sig *dbus.Signal) (Event, bool) {
	if sig.Path != objPath || len(sig.Body) != 2 {
		return Event{}, false
	}
	id, ok := sig.Body[0].(uint32)
	if !ok {
		return Event{}, false
	}
	var ev Event
	switch sig.Name {
	case iface + "." + sigAction:
		key, ok := sig.Body[1].(string)
		if !ok {
			return Event{}, false
		}
		ev = Event{Kind: ActionInvoked, ID: id, ActionKey: key}
	case iface + "." + sigClosed:
		reason, ok := sig.Body[1].(uint32)
		if !ok {
			return Event{}, false
		}
		ev = Event{Kind: Closed, ID: id, Reason: CloseReason(reason)}
	default:
		return Event{}, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	owner, ours := n.sent[id]
	if !ours || n.conn != conn || (owner != "" && sig.Sender != owner) {
		return Event{}, false
	}
	if ev.Kind == Closed {
		delete(n.sent, id)
	}
	return ev, true
}

// deliver hands ev to the reader, or drops it when the reader is behind.
func (n *Notifier) deliver(ev Event) {
	select {
	case n.events <- ev:
	default:
		n.dropped.Add(1)
	}
}

// callError turns a failed call's error into the package's vocabulary.
func (n *Notifier) callError(ctx context.Context, method string, err error) error {
	if ctx.Err() != nil {
		return n.ctxError(ctx, method)
	}
	var derr dbus.Error
	if errors.As(err, &derr) {
		switch derr.Name {
		case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
			return fmt.Errorf("%w: %s has no owner on %s; start one, such as dunst", ErrNoServer, busName, n.addr)
		case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout":
			return fmt.Errorf("%w: %s: %s", ErrTimeout, method, derr.Error())
		}
		return fmt.Errorf("notification server: %s: %w", method, err)
	}
	if errors.Is(err, dbus.ErrClosed) {
		return fmt.Errorf("%w: %s: the connection to %s ended", ErrNoSessionBus, method, n.addr)
	}
	return fmt.Errorf("notification server: %s: %w", method, err)
}

// bound returns ctx bounded by the call timeout, whose end timedOut
// tells from the caller's own.
func (n *Notifier) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, n.timeout, ErrTimeout)
}

// timedOut reports whether ctx, made by bound, ended by the call timeout.
func (n *Notifier) timedOut(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrTimeout)
}

// ctxError is the error of a call whose context ended: the call timeout
// as ErrTimeout, the caller's own deadline or cancellation as it is.
func (n *Notifier) ctxError(ctx context.Context, what string) error {
	if n.timedOut(ctx) {
		return fmt.Errorf("%w: %s did not finish within %v", ErrTimeout, what, n.timeout)
	}
	return fmt.Errorf("%s: %w", what, ctx.Err())
}
