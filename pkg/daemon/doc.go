// Package daemon is agentd's server: the socket and its checks, the
// one-daemon lock, peer credentials, the connection loop, the route table,
// graceful shutdown and systemd glue. It serves three domains the same
// way, each a package of its own: sessions (pkg/session), the screen
// (pkg/capture) and channels (pkg/channel). It is the one place that turns
// component errors into wire error codes (toWireError): the components
// raise their own sentinels (session.Kinds; channel, capture and desktop
// declare theirs by internal/errkind kind, mapped by one table, kindCodes),
// and a table test round-trips every one of them to its code.
//
// It imports pkg/wire for the contract, internal/rpc for the connection
// engine, and the components (pkg/session, pkg/capture, pkg/channel) for
// the work; nothing imports it but cmd/agentd and tests. The components are
// given to it as interfaces (Sessions, Screen, Channels in Components, to
// NewWith); New builds the real ones, and tests give fakes to check the
// routing and error tables without workers or a display.
//
// The packages, one line each (ARCHITECTURE.md has the table):
//
//	cmd/agentd, cmd/agentctl   the daemon and the client binaries
//	pkg/wire                   the contract: methods, params and results, codes, a typed client
//	internal/rpc               the connection engine both ends share: frames, Conn, upgrade
//	pkg/daemon                 this package: socket, peers, routes, shutdown, error translation
//	pkg/session                sessions: the Manager and each session's worker
//	pkg/capture                the X11 screen: screenshots, input, consent, audit
//	pkg/channel                channels: registry, queues, acks, asks through a channel
//	pkg/desktop                the agents' desktops: private X servers and their workers
//	internal/config            the TOML config and its reload
//
// How a request travels: a client's rpc.Conn writes one frame; the
// connection loop here (rpc.Conn.Serve) reads and decodes it and hands it
// to dispatch, which finds the Route, refuses new work while stopping and
// runs the handler; the handler decodes the params strictly and calls a
// component (session.Manager calls the session's worker over the same
// engine); the result, or the component's error turned into a wire code by
// toWireError, is written back as one frame. agent.attach alone answers
// with an rpc.Upgrade and the connection becomes a raw terminal stream.
//
// Desktops (desktops.go): the daemon builds the desktop.Manager in Run
// (always, so a restarted daemon lists the desktops its predecessor left)
// and a capture.Screen per running desktop on first use, made by the
// person's Screen (Screen.Desktop) so audit log and kill switch are
// shared. Every screen method resolves its desktop target there
// (screenOf): "" is the person's display and its consent; a name needs
// desktops enabled (the live config) and a running desktop. A sweep every
// two seconds closes the Screens of dead desktops, removes the desktops of
// ended sessions (spawn --desktop new) and idle ones. Desktop errors map
// to codes as: invalid invalid_params, exists agent_exists, not found (and
// dead) screen_unavailable, the cap and the display range busy, a server
// that is missing or does not start spawn_failed, desktops off refused.
//
// Decisions where the design is silent:
//   - The lock file is the socket path plus ".lock", so two daemons on
//     different sockets (tests, a second login) do not collide; a second
//     lock, agentd.lock in the state directory, keeps two daemons from
//     sharing one state directory (the second would take the first's
//     live sessions for unresponsive ones).
//   - A connection beyond the limit is accepted only to be answered busy
//     (id 0) and closed, so the client learns why instead of hanging.
//   - Connections from another uid get permission_denied and are closed
//     before any request is read.
//   - A frame that has begun must complete within ReadTimeout. A
//     connection with no request in flight and no channel (a listener
//     waits idle for pushes), follow or raw stream is closed after
//     IdleTimeout (5 min): forgotten clients must not hold the limit.
//     A client that leaves a frame unread for WriteTimeout is dropped.
//   - Fairness: one peer process (by SO_PEERCRED pid; every peer is the
//     same uid) holds at most half of MaxConnections; past it its new
//     connections are answered busy naming the limit, and other processes
//     still connect. Half, not less: a single client such as agentctl
//     serve or an MCP server may legitimately open many. Only admitted
//     connections count against MaxConnections: those being admitted
//     (waiting for their process's share) are counted apart, at most
//     MaxConnections per process, and past that a new one is answered busy
//     at once, so a process flooding the socket only fills its own part.
//   - Stop: long calls (Route.Lasts: waits, asks, attaches, log follows,
//     pushes with ack) are cancelled the moment a stop begins and answer
//     shutting_down; only other requests get ShutdownGrace. Every
//     connection left is then sent shutting_down (id 0) and closed, so a
//     channel listener learns why its connection ended.
//   - The state directory is held to the socket directory's rules: created
//     0700, a real directory (not a link), the user's, closed to others,
//     checked with lstat and again on the directory opened O_NOFOLLOW;
//     otherwise Run refuses to start, naming the fix. Another user able to
//     write there could plant or rename sessions. pkg/session checks
//     sessions/ and its files the same way.
//   - Binding a channel to a session needs the session component's word
//     that the peer runs inside it (vouchPeer: a descendant of its worker,
//     or the session's secret); refusals are permission_denied and logged
//     with the peer's pid, uid and executable, at most one a second.
package daemon
