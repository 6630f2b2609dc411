package wire

// ProtocolVersion is the version of this protocol. It changes only when an
// existing message changes incompatibly; new methods do not change it.
const ProtocolVersion = 1

// SupportedVersions lists the protocol versions this package speaks.
var SupportedVersions = []int{ProtocolVersion}

// MethodHello is the handshake.
const MethodHello = "agent.hello"

// HelloParams opens a conversation. Version 0 (absent) means "whatever the
// daemon speaks"; any other version the daemon does not speak is refused
// with unsupported_version, naming the ones it does.
type HelloParams struct {
	Version int    `json:"version,omitempty"`
	Client  string `json:"client,omitempty"` // e.g. "agentctl 0.1.0", for the daemon's log
}

// HelloResult describes the running daemon.
type HelloResult struct {
	Protocol          int    `json:"protocol"`
	SupportedVersions []int  `json:"supported_versions"`
	Version           string `json:"version"` // the daemon's release version
	// Build fingerprints the running executable (a hash of its bytes at
	// start), so a client can tell that an upgraded binary is not yet the
	// one running.
	Build     string   `json:"build"`
	PID       int      `json:"pid"`
	UptimeMS  int64    `json:"uptime_ms"`
	StartedAt string   `json:"started_at"` // RFC 3339
	Socket    string   `json:"socket"`
	StateDir  string   `json:"state_dir"`
	Limits    Limits   `json:"limits"`
	Methods   []string `json:"methods"` // read from the daemon's route table
	// Notifications says whether the daemon shows desktop notifications
	// of the agents' states, and why not (for doctor).
	Notifications *NotificationsStatus `json:"notifications,omitempty"`
}

// Limits are the bounds a client should know before it sends.
type Limits struct {
	MaxFrameBytes  int   `json:"max_frame_bytes"`
	MaxConnections int   `json:"max_connections"`
	ReadTimeoutMS  int64 `json:"read_timeout_ms"` // a frame must arrive whole within this once begun
}
