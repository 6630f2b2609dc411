package sdunit

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/agentd/agentd/pkg/session"
)

func TestUnitEnvDropsTheDaemonsUnitAndWhatSystemdRefuses(t *testing.T) {
	in := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8",
		"NOTIFY_SOCKET=/run/user/1000/systemd/notify", "LISTEN_FDS=1", "LISTEN_PID=7", "WATCHDOG_USEC=30000000",
		"INVOCATION_ID=abc", "JOURNAL_STREAM=8:9", "MANAGERPID=2",
		"BASH_FUNC_f%%=() { :; }", "1BAD=x", "=empty", "noequals", "CTRL=a\x01b", "BADUTF=\xff",
		"TABS=a\tb", "AGENTD_WORKER_SESSION_DIR=/s/w1",
	}
	got := unitEnv(in)
	want := []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "TABS=a\tb", "AGENTD_WORKER_SESSION_DIR=/s/w1"}
	if !slices.Equal(got, want) {
		t.Errorf("unitEnv(%q)\n got %q\nwant %q", in, got, want)
	}
}

func TestUnitNames(t *testing.T) {
	if got := InstanceOf("/home/u/.local/state/agentd", "/home/u/.local/state/agentd/"); got != "" {
		t.Errorf("the default state directory has instance %q, want none", got)
	}
	a, b := InstanceOf("/tmp/a/agentd", "/home/u/.local/state/agentd"), InstanceOf("/tmp/b/agentd", "/home/u/.local/state/agentd")
	if len(a) != 8 || a == b {
		t.Errorf("instances of two state directories: %q and %q, want 8 hex digits each, different", a, b)
	}
	l := &Launcher{}
	if got := l.UnitName("w1.x-y"); got != "agentd-session-w1.x-y.service" {
		t.Errorf("unit of w1.x-y: %q", got)
	}
	l.opts.Instance = a
	if got := l.UnitName("w1"); got != "agentd-session-w1-"+a+".service" || !strings.HasPrefix(got, UnitPrefix) {
		t.Errorf("unit of w1 with an instance: %q", got)
	}
}

func TestLaunchRefusesBadLimitsBeforeAskingTheManager(t *testing.T) {
	l := &Launcher{}
	l.defaults.Store(&session.Limits{})
	for _, lim := range []session.Limits{{MemoryMax: -1}, {CPUWeight: 10001}, {CPUWeight: -5}} {
		if _, err := l.Launch(t.Context(), session.LaunchSpec{Session: "w", Argv: []string{"/bin/true"}, Limits: lim}); err == nil || !strings.Contains(err.Error(), "give") {
			t.Errorf("Launch with %+v: %v, want a refusal saying what to give", lim, err)
		}
	}
}

func TestManagerErrorsAreToldFromBrokenConnections(t *testing.T) {
	exists := dbus.Error{Name: "org.freedesktop.systemd1.UnitExists", Body: []any{"Unit agentd-session-w1.service already exists."}}
	if !isUnitExists(fmt.Errorf("start: %w", exists)) || !isUnitExists(&exists) || !isManagerError(exists) {
		t.Error("a UnitExists reply is not recognised")
	}
	if isUnitExists(errors.New("unit already exists")) || isManagerError(dbus.ErrClosed) || isManagerError(io.EOF) {
		t.Error("a broken connection or a plain error is taken for the manager's reply")
	}
	err := failed("w1", "the start job of unit %s ended %q", "agentd-session-w1.service", "failed")
	if !errors.Is(err, session.ErrSpawnFailed) || !strings.HasPrefix(err.Error(), `session "w1": the start job`) {
		t.Errorf("failed: %v", err)
	}
}
