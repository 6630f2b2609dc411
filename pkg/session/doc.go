// Package session owns agentd's agent sessions: named programs running in
// pseudo-terminals, each under its own worker process, with a manifest, an
// event log and a terminal screen model. It exports Go types, methods and
// sentinel errors (Kinds lists them) and knows nothing of agentd's wire
// contract: pkg/daemon turns its errors into wire codes. It must not import
// pkg/wire, pkg/daemon or pkg/capture (a go list -deps test checks it).
//
// The Manager and its workers talk over internal/rpc, the connection engine
// agentd's own socket uses too: same frames, same envelopes. Errors cross
// that socket by the name of their kind (encodeError, decodeError), so a
// sentinel raised in a worker is the same sentinel in the Manager, and a
// *TimeoutError keeps its evidence. The names are spelled as agentd's wire
// codes were when workers first sent them, since a worker started by an
// older agentd must still be understood by a newer one.
//
// # Workers
//
// Every session runs under a worker process (`agentd worker`, the same
// binary; see RunWorker) that the Manager starts through a Launcher
// (launcher.go): forked, detached in its own process session
// (ForkLauncher), or as a systemd user unit of its own (internal/sdunit),
// which escapes the daemon's sandbox and cgroup. Either way the worker is
// found again by its pid, socket and environment, so Reconcile re-attaches
// to both kinds alike. The worker owns the PTY master, starts the program in a new
// session with the PTY as its controlling terminal, records every event in
// the event log, keeps the screen model, and serves a per-session socket
// (mode 0600, internal/rpc framing) in the runtime directory. The daemon never
// holds a PTY, so it can crash, restart or be upgraded while every program
// keeps running; a new Manager re-attaches through Reconcile.
//
// The Manager hands the worker its spawn specification over an inherited
// socket pair (fd 3, or standard input with SpecOnStdin) rather than argv, so that the environment never shows
// in ps, and the worker answers on the same socket once the program has
// started (or why it could not), before Spawn returns.
//
// Attach is the worker's raw stream (worker.attach_stream, an rpc upgrade):
// output bytes one way, input bytes the other, piped by the Manager to the
// attacher, with no framing or encoding in between. Workers an older agentd
// started know only worker.attach (output as JSON notifications, input as
// one call per chunk); the Manager falls back to it for them, since workers
// outlive upgrades.
//
// Ask, wait and an ask's wait for the program to be ready run on one
// watcher loop (worker.watch, watch.go): it looks at the session under the
// worker's lock on every change and when a decision function asks for a
// later look; each operation is only its decision function.
//
// The worker is a child subreaper (PR_SET_CHILD_SUBREAPER): descendants that
// the program orphans are re-parented to it, so Stop can find and kill every
// descendant (its process group, its session, and any process below the
// worker, even one that called setsid) and reap them all. The program gets
// PR_SET_PDEATHSIG=SIGKILL, and the PTY hangs up, when its worker dies, so a
// program never outlives a killed worker. When the program ends by itself,
// whatever it left running in the background is killed too: a session's
// processes end with the session.
//
// # Screen model
//
// The worker keeps each session's rendered screen in a
// termmodel.Screen (pkg/termmodel, which records its decisions): output is
// queued as it arrives and fed before anyone reads the screen, terminal
// queries at once. The ask's prompt rules are termmodel's pure functions
// too (termmodel.Prompt). The PTY is opened directly rather than through
// github.com/creack/pty, whose ioctls put the master into blocking mode, so
// reads and writes keep deadlines.
//
// # Files
//
// Under the state directory (ManagerOptions.StateDir):
//
//	sessions/<name>/manifest.json     the session's record, replaced atomically
//	                                  (temp file, fsync, rename, fsync dir)
//	sessions/<name>/events.jsonl      the event log, one JSON record per line
//	sessions/<name>/events.jsonl.1    the previous part after rotation
//	sessions/<name>/worker.log        the worker's own diagnostics (stderr)
//	sessions/<name>/restart.json      what a restart needs that the manifest
//	                                  does not keep: the spawn's environment
//	                                  values (0600; restart.go)
//	sessions/<name>/hooks-claude.json the hooks of a Claude Code session's
//	                                  --settings overlay (0600; hooks.go)
//	worktrees/<repo>-<hash>/<name>/   a spawn --worktree session's git worktree
//	                                  (internal/worktree; its record is in the
//	                                  manifest, and Remove removes it first)
//
// and under the runtime directory (ManagerOptions.RuntimeDir) one socket per
// live worker, <name>.sock. The manifest keeps the names of the environment
// variables given at spawn, never their values; restart.json keeps the
// values, for restarts (restart.go says when a session is restarted and how
// the event log goes on across it; resume.go how an agent CLI resumes its
// conversation).
//
// # Event log
//
// Each line is one Event: {"seq":N,"ts":"RFC 3339 nano","type":...}, seq
// starting at 1 and increasing by one across rotation. Output and input
// bytes are stored in "data" as a JSON string when they are valid UTF-8, and
// otherwise base64-encoded in "data_b64" (exactly one of the two is present),
// so every byte survives. The worker writes the log with one write per
// record, so output produced while the daemon is down is recorded. When
// events.jsonl grows past half of the cap (ManagerOptions.LogCap) it is
// renamed to events.jsonl.1, replacing the older part: the log on disk never
// exceeds the cap by more than one record. A last line torn by a crash (no
// newline, or not a valid record) is cut when the log is opened for writing;
// every line before it is kept. Readers skip it.
//
// A full disk never stops a program: a record that cannot be written takes
// no seq and is counted (records, and bytes of data); what it half wrote is
// cut off at once (truncate needs no space), or before the next append if
// even that failed, so no later record fuses into it. The first record
// written once space returns is preceded by a "gap" record with the count
// and bytes lost: seq numbers stay contiguous and the hole is on record.
// Spawn writes a first manifest (starting) before it starts anything, so
// on a full disk it fails at once with ErrSpawnFailed naming the disk and
// the directory, leaving nothing; Remove writes nothing.
//
// # Broken sessions
//
// A session directory whose manifest is missing (outside a spawn by this
// Manager) or damaged is reported with StatusBroken and the reason, by
// List, Status and every method that refuses it; it is never dropped from
// List nor an internal error. Stop ends whatever of it runs: a worker that
// answers on its socket stops its program as usual (and writes a valid
// manifest again); one found only by its process (workerDirEnv) gets
// SIGTERM, which stops its program and records the end, and is killed with
// everything below it if it has not exited past DefaultStopGrace. Remove
// deletes a broken session, with force while a worker of it lives.
// Reconcile classifies every directory: attached, ended, marked failed,
// broken (kept: it may hold a log worth reading), orphan worker, and
// removed leftovers (no manifest, no worker, no event; or a ".rm-"
// directory an interrupted removal left). Removal writes nothing, not even
// a "destroying" manifest, so it works on a full disk.
//
// # Status in memory, and workers that do not answer
//
// The Manager pings every attached worker each second and keeps the answer
// (health.go); List answers from those copies and a cached listing of
// sessions/ (listcache.go), never calling a worker, so it costs the same
// whatever the workers do. The worker answers a ping from a copy of its
// status published at every change, without its mutex, which is held
// across event-log and manifest writes. Every call to a worker has a
// deadline (its callSpec, workercalls.go): status-like calls
// statusCallTimeout, input inputCallTimeout, stop its grace and a margin,
// ask and wait their callers' deadlines. Attaching to, judging and settling
// a worker take only its session's lock (locks.go, with the lock order), so
// a worker that does not answer delays nothing but calls on its own
// session. A status-like call or ping that
// misses its deadline makes the session StatusUnresponsive (reported, never
// stored) with how long the worker has been silent; new calls on it are
// refused, and calls in flight abandoned (long ones, an ask or a wait, only
// when the worker is stopped by a signal or silent for abandonSilence, so
// load alone does not fail them), with an error (ErrInvalidStatus) that
// names the session and `agentctl stop --force`; Stop with Force kills the
// worker and the program and records host_death. The first answer after
// that (SIGCONT) makes it running again, and cancels in the worker an ask
// abandoned meanwhile, which would otherwise hold the session's ask lock.
// Workers are pinged rather than asked to push their changes because
// workers outlive upgrades: a worker of any older agentd answers
// worker.status.
//
// # Spawn failure
//
// A program that cannot start (missing binary, unreadable cwd) makes Spawn
// return ErrSpawnFailed with the reason, and leaves no session behind (no
// directory, no socket, no worker), so the name can be used again at once.
// The reason names the cause and the path, as the shell would: "exec
// /nonexistent/bin: no such file or directory", "exec /f: permission denied
// (not executable)", "working directory /d: no such file or directory". The
// worker checks the working directory and the command before it opens
// anything, and exec's own errors are put in the same words. The
// termination category spawn_failure is carried by that error (SpawnError).
//
// Every worker's environment holds AGENTD_WORKER_SESSION_DIR, its session
// directory, so a worker can be found by its process when its socket or
// manifest is gone.
//
// # Session secret
//
// The worker makes a random secret for its session at start and puts it
// in the program's environment as TokenEnv (AGENTD_SESSION_TOKEN), replacing
// any inherited one, and nowhere else: not argv, not a file, not the
// manifest, not the worker protocol. Vouch uses it, with process ancestry,
// to say whether a process runs inside a session, which the daemon asks
// before binding a channel to a session.
//
// Decision (issue 21, D7): the worker's hello carries only the secret's
// SHA-256 (tokenDigestOf), which the Manager keeps in memory (never in
// Info) and compares, in constant time, with the digest of a token
// presented to Vouch. The hello once carried the secret itself, and
// anyone who reached the worker's socket could then bind a channel to the
// session and answer its asks. Of the ways to check a token without the
// Manager holding it, this one needs no call to the worker per check (a
// worker.verify call would put a worker round trip, and its failures, in
// every binding) and no file (a 0600 digest file is as readable as the
// socket to the user's processes, and one more thing to keep in step);
// a digest of 256 random bits gives nothing to present. Workers of an
// older agentd still send the secret; the Manager digests it at once.
//
// # Privacy
//
// Nothing a user typed, asked or was answered is ever written to the logger;
// it goes to the session's own event log only.
package session
