package main

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

func TestDoctorReportsNotifications(t *testing.T) {
	for _, tc := range []struct {
		name   string
		h      *wire.HelloResult
		status string
	}{
		{"no daemon", nil, checkSkipped},
		{"no session bus", &wire.HelloResult{Notifications: &wire.NotificationsStatus{Why: "no session bus: $DBUS_SESSION_BUS_ADDRESS is not set"}}, checkSkipped},
		{"no server", &wire.HelloResult{Notifications: &wire.NotificationsStatus{On: true, Bus: "unix:path=/x", Why: "no notification server"}}, checkFail},
		{"dunst", &wire.HelloResult{Notifications: &wire.NotificationsStatus{On: true, Bus: "unix:path=/x", Server: "dunst 1.9", Actions: true}}, checkPass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := checkNotifications(tc.h)
			if c.Status != tc.status || c.Detail == "" {
				t.Fatalf("got %+v, want status %s with a detail", c, tc.status)
			}
			if tc.h != nil && tc.h.Notifications != nil && tc.h.Notifications.Why != "" && c.Status != checkPass && !strings.Contains(c.Detail, tc.h.Notifications.Why) {
				t.Errorf("detail %q does not say why (%q)", c.Detail, tc.h.Notifications.Why)
			}
		})
	}
}
