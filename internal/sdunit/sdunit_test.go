package sdunit

import (
	"slices"
	"strings"
	"testing"

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
