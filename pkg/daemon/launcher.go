package daemon

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentd/agentd/internal/sdunit"
	"github.com/agentd/agentd/pkg/session"
)

// The values of Config.SessionLauncher.
const (
	LauncherAuto    = "auto"
	LauncherSystemd = "systemd"
	LauncherFork    = "fork"
)

// sessionLauncher chooses how session workers start: as systemd user units
// of their own when a user manager answers (auto, systemd), forked
// otherwise (auto, fork). It logs the choice, and warns when forked
// workers inherit restrictions of this process (agentd.service's seccomp
// filter, no_new_privs) that take rights from session programs. systemd
// without a manager is an error: the person asked for units.
func (d *Daemon) sessionLauncher(ctx context.Context) (session.Launcher, func(), error) {
	mode := d.cfg.SessionLauncher
	if mode == "" {
		mode = LauncherAuto
	}
	limits := session.Limits{MemoryMax: d.live.Load().SessionMemoryMax, CPUWeight: d.live.Load().SessionCPUWeight}
	var why string
	if mode != LauncherFork {
		l, err := sdunit.Connect(ctx, sdunit.Options{
			Instance: sdunit.InstanceOf(d.cfg.StateDir, DefaultStateDir()),
			Defaults: limits,
		})
		if err == nil {
			d.log.Info().Str("launcher", l.Kind()).Str("manager", l.Address()).Str("units", l.UnitName("NAME")).
				Msg("sessions start as systemd user units of their own")
			return l, func() { l.Close() }, nil
		}
		if mode == LauncherSystemd {
			return nil, nil, fmt.Errorf("session_launcher is systemd, but %v; start agentd under a user manager (systemctl --user start agentd.socket) or set session_launcher to auto", err)
		}
		why = err.Error()
	} else {
		why = "session_launcher is fork"
	}
	ev := d.log.Info()
	inherited := session.Inherited()
	if len(inherited) > 0 {
		ev = d.log.Warn().Strs("inherited", inherited)
	}
	if !limits.IsZero() {
		ev = d.log.Warn().Strs("inherited", inherited).Int64("session_memory_max", limits.MemoryMax).Int("session_cpu_weight", limits.CPUWeight)
		why += "; session_memory_max and session_cpu_weight are not applied (no cgroup per session)"
	}
	msg := "sessions are forked by agentd"
	if len(inherited) > 0 {
		msg += ", and inherit its " + strings.Join(inherited, " and ") + ": programs may lack the network, setuid and user namespaces"
	}
	ev.Str("launcher", "fork").Str("why", why).Msg(msg)
	return session.ForkLauncher{}, func() {}, nil
}

// launcherOf says how a live session's worker was started, from the
// worker's cgroup: "systemd" and its unit, or "fork". Nothing for a session
// without a live worker.
func launcherOf(i *session.Info) (kind, unit string) {
	if i.WorkerPID <= 0 || i.Status.Terminal() {
		return "", ""
	}
	u := session.UnitOf(i.WorkerPID)
	if strings.HasPrefix(u, sdunit.UnitPrefix) {
		return "systemd", u
	}
	return "fork", ""
}
