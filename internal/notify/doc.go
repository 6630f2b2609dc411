// Package notify shows desktop notifications through the freedesktop.org
// notification server (org.freedesktop.Notifications) on the person's
// session bus, and reports what the person does with them: the action they
// chose (ActionInvoked) and the notification's end (NotificationClosed).
// It is the transport only: which session state deserves a notification,
// and what an action does, belong to its caller. It imports nothing of
// agentd but internal/errkind.
//
// # Why godbus
//
// github.com/godbus/dbus/v5 is the pure-Go D-Bus library the project
// already uses (internal/sdunit, through go-systemd): no cgo, no libdbus or
// GLib in the daemon, and a connection whose calls take a context. Running
// notify-send or gdbus per notification was rejected: it costs a process
// per call, cannot receive the action signals, and hides the errors.
//
// # What a server must support
//
// Notify, CloseNotification, GetCapabilities and GetServerInformation of
// the Desktop Notifications Specification (1.2), and the ActionInvoked and
// NotificationClosed signals. Actions need the "actions" capability;
// Capabilities says whether the server has it (dunst, GNOME Shell, KDE
// Plasma, xfce4-notifyd and mako do), so a caller can offer the terminal
// commands (agentctl approve) instead. The tests run against dunst on a
// private bus and X server.
//
// # Bounds
//
// A summary is cut to MaxSummary bytes and a body to MaxBody bytes (at a
// character boundary, with an ellipsis), at most MaxActions actions are
// sent, and text that is not valid UTF-8 or holds NUL bytes is repaired
// first: the bus daemon disconnects a client that sends such a string,
// which would end the subscription with it. Every call runs under
// Options.CallTimeout (on top of the caller's context), connecting
// included, so a hung bus or notification server never holds the caller
// longer than that; the error then wraps ErrTimeout.
//
// # Escaping
//
// Servers that advertise "body-markup" read the body as a small subset of
// HTML (b, i, u, a, img), so a body such as "a < b && c" would be cut or
// dropped. Body text is therefore escaped: & to &amp;, < to &lt;, > to
// &gt;; what agentd shows is always plain text. The summary is plain text
// by the specification and is sent as it is.
//
// # Signals, and whose they are
//
// The connection adds match rules for the two signals of the server's
// object, since servers such as GNOME Shell broadcast them; dunst sends
// them to the notification's sender only. An event is delivered only when
// its notification was sent by this Notifier and the signal comes from the
// bus name that owned org.freedesktop.Notifications when it was sent:
// another program's notifications share the server's id space, and any
// client of the bus can emit a signal named ActionInvoked. (A program of
// the same user can still drive the server itself, dunstctl context for
// one; the caller checks the screen before it acts on an action.)
//
// # When the bus goes away
//
// The connection is made on the first call and again, lazily, on the first
// call after it was lost. Losing it ends its signal goroutine and is
// reported as an event of kind BusLost: notifications sent on the lost
// connection will report nothing more, since a server sends their signals
// to the connection that sent them. A bus daemon that stops answering
// (Notify first asks it who owns the server's name) counts as lost: the
// connection is closed rather than kept, since messages to a bus that
// reads nothing fill the socket until a write blocks past every timeout.
// A server that stops answering only costs its calls their timeout; the
// connection stays, so its notifications' actions still arrive if it
// recovers. Shutdown ends the goroutine and closes the events channel;
// nothing else outlives the Notifier.
//
// # For doctor
//
// New fails with ErrNoSessionBus when $DBUS_SESSION_BUS_ADDRESS is unset;
// ServerInformation fails with ErrNoSessionBus (nothing answers at the
// address), ErrNoServer (no server owns the name) or ErrTimeout, each
// message naming the address and the fix, and otherwise names the server;
// Capabilities says whether it shows actions.
package notify
