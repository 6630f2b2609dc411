package daemon

import (
	"os"
	"time"

	"github.com/rs/zerolog"
)

// fixedConfig is the part of Config read once, at start: the daemon's
// places, its components' construction and the reload machinery. A reload
// that changes one of these is logged as needing a restart. The daemon
// keeps it apart from liveConfig, so that no call site can read a
// reloadable setting from the start-time copy or a start-time one from the
// reloaded copy: the compiler says which is which.
type fixedConfig struct {
	SocketPath           string
	StateDir             string
	MaxSessions          int
	Logger               zerolog.Logger
	EventLogCap          int64
	WorkerCommand        []string
	ReconcileTimeout     time.Duration
	Display              string
	AuditMaxBytes        int64
	RecordScreenMaxBytes int64
	DesktopWorkerCommand []string
	MemoryBudget         int64
	ConfigPath           string
	Reload               func() (Config, error)
	SetLogLevel          func(level string) error
	Hangup               <-chan os.Signal
	SessionLauncher      string
	View                 bool
	ViewIdle             time.Duration
	Notifications        bool
	NotifyBus            string
	NotifyWaitingAfter   time.Duration
	NotifyTerminal       []string
}

// liveConfig is the part of Config a reload changes while the daemon runs
// (d.live, swapped whole by reload): limits and timeouts of new
// connections and requests, consent, the log level, desktops, a spawn's
// default limits.
type liveConfig struct {
	MaxConnections                   int
	ReadTimeout                      time.Duration
	WriteTimeout                     time.Duration
	IdleTimeout                      time.Duration
	ShutdownGrace                    time.Duration
	AllowAct                         bool
	AskTimeout, AskIdle, LockTimeout time.Duration
	ChannelQueue                     int
	RecordScreen                     bool
	Desktops                         bool
	MaxDesktops                      int
	DesktopIdleTimeout               time.Duration
	DesktopServer                    string
	LogLevel                         string
	SessionMemoryMax                 int64
	SessionCPUWeight                 int
	SessionRestart                   string
	NoHooks                          bool
}

// split divides c into what is fixed at start and what reloads; a test
// holds every field of Config to exactly one of the two.
func (c *Config) split() (fixedConfig, liveConfig) {
	return fixedConfig{
			SocketPath: c.SocketPath, StateDir: c.StateDir, MaxSessions: c.MaxSessions, Logger: c.Logger,
			EventLogCap: c.EventLogCap, WorkerCommand: c.WorkerCommand, ReconcileTimeout: c.ReconcileTimeout,
			Display: c.Display, AuditMaxBytes: c.AuditMaxBytes, RecordScreenMaxBytes: c.RecordScreenMaxBytes,
			DesktopWorkerCommand: c.DesktopWorkerCommand, MemoryBudget: c.MemoryBudget, ConfigPath: c.ConfigPath,
			Reload: c.Reload, SetLogLevel: c.SetLogLevel, Hangup: c.Hangup, SessionLauncher: c.SessionLauncher,
			View: c.View, ViewIdle: c.ViewIdle,
			Notifications: c.Notifications, NotifyBus: c.NotifyBus, NotifyWaitingAfter: c.NotifyWaitingAfter, NotifyTerminal: c.NotifyTerminal,
		}, liveConfig{
			MaxConnections: c.MaxConnections, ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout,
			IdleTimeout: c.IdleTimeout, ShutdownGrace: c.ShutdownGrace, AllowAct: c.AllowAct,
			AskTimeout: c.AskTimeout, AskIdle: c.AskIdle, LockTimeout: c.LockTimeout, ChannelQueue: c.ChannelQueue,
			RecordScreen: c.RecordScreen, Desktops: c.Desktops, MaxDesktops: c.MaxDesktops,
			DesktopIdleTimeout: c.DesktopIdleTimeout, DesktopServer: c.DesktopServer, LogLevel: c.LogLevel,
			SessionMemoryMax: c.SessionMemoryMax, SessionCPUWeight: c.SessionCPUWeight, SessionRestart: c.SessionRestart,
			NoHooks: c.NoHooks,
		}
}
