package daemon

import (
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/agentd/agentd/pkg/session"
)

// reloadSettle is how long the config directory must be quiet before a
// change is read: editors write a file in several steps.
const reloadSettle = 150 * time.Millisecond

// watchConfig reloads the config when its file changes and on SIGHUP
// (Config.Hangup). It watches the directory, not the file, so editors that
// replace the file (write a temp file, rename it over) are seen, and so is
// a file created later. A bad edit keeps the running settings and logs
// why; the next good edit is picked up. Both causes are served by one
// goroutine, so two reloads never run at once. It returns the function
// that stops watching.
func (d *Daemon) watchConfig() (stop func()) {
	var events <-chan fsnotify.Event
	var errs <-chan error
	closeWatch := func() {}
	name := ""
	if d.cfg.ConfigPath != "" && d.cfg.Reload != nil {
		dir := filepath.Dir(d.cfg.ConfigPath)
		name = filepath.Base(d.cfg.ConfigPath)
		if w := d.watchDir(dir); w != nil {
			events, errs, closeWatch = w.Events, w.Errors, func() { w.Close() }
		}
	}
	if events == nil && d.cfg.Hangup == nil {
		return func() {}
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var settle <-chan time.Time
		for {
			select {
			case <-quit:
				return
			case ev, ok := <-events:
				if !ok {
					events = nil
					continue
				}
				if filepath.Base(ev.Name) == name {
					settle = time.After(reloadSettle)
				}
			case err, ok := <-errs:
				if !ok {
					errs = nil
					continue
				}
				d.log.Warn().Err(err).Msg("config watch error")
			case <-settle:
				settle = nil
				d.reload()
			case <-d.cfg.Hangup:
				if d.cfg.Reload == nil {
					d.log.Info().Msg("SIGHUP: no config to reload")
					continue
				}
				d.log.Info().Str("config", d.cfg.ConfigPath).Msg("SIGHUP: reloading the config")
				d.reload()
			}
		}
	}()
	return func() { close(quit); closeWatch(); <-done }
}

// watchDir watches the config's directory, creating it, or logs why live
// reload on change is off and returns nil (SIGHUP still reloads).
func (d *Daemon) watchDir(dir string) *fsnotify.Watcher {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		d.log.Warn().Err(err).Str("dir", dir).Msg("cannot create the config directory; live reload on change is off (SIGHUP reloads)")
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		d.log.Warn().Err(err).Msg("cannot watch the config; live reload on change is off (SIGHUP reloads)")
		return nil
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		d.log.Warn().Err(err).Str("dir", dir).Msg("cannot watch the config directory; live reload on change is off (SIGHUP reloads)")
		return nil
	}
	return w
}

// reload reads the config again and applies what can change live.
func (d *Daemon) reload() {
	next, err := d.cfg.Reload()
	if err != nil {
		d.log.Error().Err(err).Msg("config not reloaded; the running settings stay")
		return
	}
	next.setDefaults()
	cur := d.live.Load()
	var applied, restart []string
	if next.LogLevel != cur.LogLevel && d.cfg.SetLogLevel != nil {
		if err := d.cfg.SetLogLevel(next.LogLevel); err == nil {
			d.setLogLevel(next.LogLevel)
			applied = append(applied, "log_level")
		} else {
			d.log.Warn().Err(err).Str("log_level", next.LogLevel).Msg("log level not changed")
			next.LogLevel = cur.LogLevel
		}
	}
	if next.ChannelQueue != cur.ChannelQueue {
		d.channels.SetQueueCap(next.ChannelQueue)
	}
	d.applyTimeouts(&next)
	if next.SessionMemoryMax != cur.SessionMemoryMax || next.SessionCPUWeight != cur.SessionCPUWeight {
		if dl, ok := d.launcher.(interface{ SetDefaults(session.Limits) }); ok {
			dl.SetDefaults(session.Limits{MemoryMax: next.SessionMemoryMax, CPUWeight: next.SessionCPUWeight})
			applied = append(applied, "session_memory_max", "session_cpu_weight")
		} else {
			d.log.Warn().Msg("session_memory_max and session_cpu_weight are not applied: sessions are forked (no cgroup per session)")
		}
	}
	if next.AllowAct != cur.AllowAct {
		d.screen.SetAllowAct(next.AllowAct)
		applied = append(applied, "allow_act")
	}
	if next.RecordScreen != cur.RecordScreen {
		if err := d.screen.SetRecordScreen(next.RecordScreen); err != nil {
			d.log.Warn().Err(err).Msg("record_screen not changed")
			next.RecordScreen = cur.RecordScreen
		} else {
			applied = append(applied, "record_screen")
		}
	}
	for _, c := range []struct {
		key     string
		changed bool
	}{
		{"max_connections", next.MaxConnections != cur.MaxConnections},
		{"read_timeout", next.ReadTimeout != cur.ReadTimeout},
		{"shutdown_grace", next.ShutdownGrace != cur.ShutdownGrace},
		{"write_timeout", next.WriteTimeout != cur.WriteTimeout}, // new connections
		{"idle_timeout", next.IdleTimeout != cur.IdleTimeout},    // new connections
		{"ask_timeout", next.AskTimeout != cur.AskTimeout},
		{"ask_idle", next.AskIdle != cur.AskIdle},
		{"lock_timeout", next.LockTimeout != cur.LockTimeout},
		{"channel_queue", next.ChannelQueue != cur.ChannelQueue},
	} {
		if c.changed {
			applied = append(applied, c.key)
		}
	}
	for _, c := range []struct {
		key     string
		changed bool
	}{
		{"socket", next.SocketPath != cur.SocketPath},
		{"state_dir", next.StateDir != cur.StateDir},
		{"display", next.Display != cur.Display},
		{"event_log_cap", next.EventLogCap != cur.EventLogCap},
		{"max_sessions", next.MaxSessions != cur.MaxSessions},
		{"audit_log_cap", next.AuditMaxBytes != cur.AuditMaxBytes},
		{"session_launcher", next.SessionLauncher != cur.SessionLauncher},
	} {
		if c.changed {
			restart = append(restart, c.key)
		}
	}
	// Keep what needs a restart as it runs, so a later reload compares
	// against what is really in force.
	next.SocketPath, next.StateDir, next.Display = cur.SocketPath, cur.StateDir, cur.Display
	next.EventLogCap, next.AuditMaxBytes = cur.EventLogCap, cur.AuditMaxBytes
	next.SessionLauncher = cur.SessionLauncher
	d.live.Store(&next)
	d.helloJSON.Store(nil)
	ev := d.log.Info().Strs("applied", applied)
	if len(restart) > 0 {
		ev = ev.Strs("need_restart", restart)
	}
	ev.Msg("config reloaded")
}

// applyTimeouts hands the config's request defaults to the components,
// which apply them to requests that give none: the session manager to
// asks, the channel registry to asks through a channel, the screen to an
// act's wait for the screen.
func (d *Daemon) applyTimeouts(c *Config) {
	d.sessions.SetTimeouts(session.Timeouts{Ask: c.AskTimeout, AskIdle: c.AskIdle, Lock: c.LockTimeout})
	d.channels.SetAskTimeout(c.AskTimeout)
	d.screen.SetLockTimeout(c.LockTimeout)
}
