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
	nextFixed, nextLive := next.split()
	cur, was := d.live.Load(), d.configured
	var applied, restart []string
	if nextLive.LogLevel != cur.LogLevel && d.cfg.SetLogLevel != nil {
		if err := d.cfg.SetLogLevel(nextLive.LogLevel); err == nil {
			d.setLogLevel(nextLive.LogLevel)
			applied = append(applied, "log_level")
		} else {
			d.log.Warn().Err(err).Str("log_level", nextLive.LogLevel).Msg("log level not changed")
			nextLive.LogLevel = cur.LogLevel
		}
	}
	if nextLive.ChannelQueue != cur.ChannelQueue {
		d.channels.SetQueueCap(nextLive.ChannelQueue)
	}
	d.applyTimeouts(&nextLive)
	if nextLive.SessionMemoryMax != cur.SessionMemoryMax || nextLive.SessionCPUWeight != cur.SessionCPUWeight {
		if dl, ok := d.launcher.(interface{ SetDefaults(session.Limits) }); ok {
			dl.SetDefaults(session.Limits{MemoryMax: nextLive.SessionMemoryMax, CPUWeight: nextLive.SessionCPUWeight})
			applied = append(applied, "session_memory_max", "session_cpu_weight")
		} else {
			d.log.Warn().Msg("session_memory_max and session_cpu_weight are not applied: sessions are forked (no cgroup per session)")
		}
	}
	if nextLive.AllowAct != cur.AllowAct {
		d.screen.SetAllowAct(nextLive.AllowAct)
		applied = append(applied, "allow_act")
	}
	if nextLive.RecordScreen != cur.RecordScreen {
		if err := d.screen.SetRecordScreen(nextLive.RecordScreen); err != nil {
			d.log.Warn().Err(err).Msg("record_screen not changed")
			nextLive.RecordScreen = cur.RecordScreen
		} else {
			applied = append(applied, "record_screen")
		}
	}
	for _, c := range []struct {
		key     string
		changed bool
	}{
		{"max_connections", nextLive.MaxConnections != cur.MaxConnections},
		{"read_timeout", nextLive.ReadTimeout != cur.ReadTimeout},
		{"shutdown_grace", nextLive.ShutdownGrace != cur.ShutdownGrace},
		{"write_timeout", nextLive.WriteTimeout != cur.WriteTimeout}, // new connections
		{"idle_timeout", nextLive.IdleTimeout != cur.IdleTimeout},    // new connections
		{"ask_timeout", nextLive.AskTimeout != cur.AskTimeout},
		{"ask_idle", nextLive.AskIdle != cur.AskIdle},
		{"lock_timeout", nextLive.LockTimeout != cur.LockTimeout},
		{"channel_queue", nextLive.ChannelQueue != cur.ChannelQueue},
	} {
		if c.changed {
			applied = append(applied, c.key)
		}
	}
	for _, c := range []struct {
		key     string
		changed bool
	}{
		{"socket", nextFixed.SocketPath != was.SocketPath},
		{"state_dir", nextFixed.StateDir != was.StateDir},
		{"display", nextFixed.Display != was.Display},
		{"event_log_cap", nextFixed.EventLogCap != was.EventLogCap},
		{"max_sessions", nextFixed.MaxSessions != was.MaxSessions},
		{"audit_log_cap", nextFixed.AuditMaxBytes != was.AuditMaxBytes},
		{"session_launcher", nextFixed.SessionLauncher != was.SessionLauncher},
	} {
		if c.changed {
			restart = append(restart, c.key)
		}
	}
	d.live.Store(&nextLive)
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
func (d *Daemon) applyTimeouts(c *liveConfig) {
	d.sessions.SetTimeouts(session.Timeouts{Ask: c.AskTimeout, AskIdle: c.AskIdle, Lock: c.LockTimeout})
	d.channels.SetAskTimeout(c.AskTimeout)
	d.screen.SetLockTimeout(c.LockTimeout)
}
