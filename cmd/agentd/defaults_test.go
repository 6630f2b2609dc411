package main

import (
	"testing"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/channel"
	"github.com/agentd/agentd/pkg/daemon"
	"github.com/agentd/agentd/pkg/session"
)

// TestConfigDefaultsAreTheComponents: the config's defaults (what
// --print-config shows and the README lists) are the values each component
// falls back to when nothing is set. The config cannot import the
// components, so each number is written twice; this is where a change to
// one without the other fails, and so, in effect, each default has one
// value.
func TestConfigDefaultsAreTheComponents(t *testing.T) {
	d := config.Defaults()
	st := session.DefaultTimeouts()
	for _, c := range []struct {
		key               string
		config, component any
	}{
		{"ask_timeout (sessions)", d.AskTimeout.D(), st.Ask},
		{"ask_timeout (channels)", d.AskTimeout.D(), channel.DefaultAskTimeout},
		{"ask_idle", d.AskIdle.D(), st.AskIdle},
		{"lock_timeout (sessions)", d.LockTimeout.D(), st.Lock},
		{"lock_timeout (screen)", d.LockTimeout.D(), capture.DefaultLockTimeout},
		{"max_connections", d.MaxConnections, daemon.DefaultMaxConnections},
		{"max_sessions", d.MaxSessions, session.DefaultMaxSessions},
		{"read_timeout", d.ReadTimeout.D(), rpc.DefaultReadTimeout},
		{"write_timeout", d.WriteTimeout.D(), rpc.DefaultWriteTimeout},
		{"idle_timeout", d.IdleTimeout.D(), daemon.DefaultIdleTimeout},
		{"shutdown_grace", d.ShutdownGrace.D(), daemon.DefaultShutdownGrace},
		{"memory_budget", d.MemoryBudget, int64(daemon.DefaultMemoryBudget)},
		{"event_log_cap", d.EventLogCap, int64(session.DefaultLogCap)},
		{"channel_queue", d.ChannelQueue, channel.DefaultQueue},
		{"audit_log_cap", d.AuditLogCap, int64(capture.DefaultAuditMaxBytes)},
		{"record_screen_cap", d.RecordScreenCap, int64(capture.DefaultRecordScreenMaxBytes)},
		{"session_restart", d.SessionRestart, string(session.RestartNo)},
		{"session_restart's on-reboot", config.RestartOnReboot, string(session.RestartOnReboot)},
		{"session_restart's always", config.RestartAlways, string(session.RestartAlways)},
	} {
		if c.config != c.component {
			t.Errorf("%s: the config's default is %v, the component's %v; make them one value", c.key, c.config, c.component)
		}
	}
}
