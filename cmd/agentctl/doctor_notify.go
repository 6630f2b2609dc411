package main

import "github.com/agentd/agentd/pkg/wire"

// checkNotifications reports the daemon's desktop notifications, as its
// hello says: a session without a bus, or with them turned off, is a
// setup, not a failure (everything else works); a bus with no
// notification server answering loses every notification.
func checkNotifications(h *wire.HelloResult) doctorCheck {
	c := doctorCheck{Name: "notifications"}
	switch {
	case h == nil:
		c.Status, c.Detail = checkSkipped, "the daemon does not answer"
	case h.Notifications == nil:
		c.Status, c.Detail = checkSkipped, "this agentd does not report its notifications"
	case !h.Notifications.On:
		c.Status, c.Detail = checkSkipped, "off: "+h.Notifications.Why
		c.Fix = "run agentd in the desktop session (systemctl --user import-environment DBUS_SESSION_BUS_ADDRESS, then restart it); or leave them off"
	case h.Notifications.Server == "":
		c.Status, c.Detail = checkFail, "on, but "+h.Notifications.Why
		c.Fix = "start a notification server on the session bus (dunst, mako, your desktop's), or set notifications = false"
	default:
		c.Status = checkPass
		c.Detail = "shown by " + h.Notifications.Server + " on " + h.Notifications.Bus
		if !h.Notifications.Actions {
			c.Detail += "; " + h.Notifications.Why
		}
	}
	return c
}
