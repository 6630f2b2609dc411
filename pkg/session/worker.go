package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/internal/ttyready"
	"github.com/agentd/agentd/pkg/agentstate"
	"github.com/agentd/agentd/pkg/eventlog"
	"github.com/agentd/agentd/pkg/termmodel"
)

// spawnFD is the descriptor on which a worker receives its specification
// and reports whether the program started.
const spawnFD = 3

// inputTimeout bounds one write of input to a program that is not reading.
const inputTimeout = 10 * time.Second

// RunWorker is `agentd worker`: it runs one session's worker until the
// program has ended and everything about it is recorded, and returns the
// process exit status. cmd/agentd calls it when argv[1] is "worker", with
// the remaining arguments (unused today) and a context cancelled on SIGTERM
// or SIGINT; cancelling it stops the program (SIGTERM, then SIGKILL after
// DefaultStopGrace) and records how it ended. The Manager starts workers;
// the specification comes on fd 3, never from argv, and a worker run by hand
// says so and exits 2.
func RunWorker(ctx context.Context, args []string, stderr io.Writer) int {
	_ = args
	log := zerolog.New(stderr).With().Timestamp().Str("component", "session-worker").Logger()
	f := os.NewFile(spawnFD, "agentd-spawn")
	var conn net.Conn
	var err error
	if f != nil {
		conn, err = net.FileConn(f)
		f.Close()
	}
	if f == nil || err != nil {
		fmt.Fprintln(stderr, "agentd worker runs one session for agentd and is started by it; it is not meant to be run by hand (use agentctl spawn)")
		return 2
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	body, err := rpc.ReadFrame(conn)
	if err != nil {
		log.Error().Err(err).Msg("read spawn specification")
		return 2
	}
	var spec workerSpec
	if err := json.Unmarshal(body, &spec); err != nil {
		log.Error().Err(err).Msg("decode spawn specification")
		return 2
	}
	log = log.With().Str("session", spec.Name).Logger()
	w, err := startWorker(ctx, spec, log)
	if err != nil {
		writeJSONFrame(conn, workerReady{Error: err.Error()})
		log.Info().Str("reason", err.Error()).Msg("program could not start")
		return 1
	}
	if err := writeJSONFrame(conn, workerReady{OK: true, WorkerPID: os.Getpid(), ProgramPID: w.pid}); err != nil {
		// The Manager gave up on us; the session is recorded and runs on, and
		// the next reconcile attaches to it.
		log.Warn().Err(err).Msg("could not report the start to agentd")
	}
	conn.Close()
	return w.run(ctx)
}

func writeJSONFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return rpc.WriteFrame(w, b)
}

// worker is one session's worker state.
type worker struct {
	spec   workerSpec
	log    zerolog.Logger
	master *os.File
	slave  *os.File
	ln     net.Listener
	pid    int    // the program's, also its process group and session id
	token  string // the session's secret, in the program's environment only
	// tokenDigest is tokenDigestOf(token), the one form of the secret the
	// worker tells anyone.
	tokenDigest string

	exitc    chan unix.WaitStatus // the program's wait status, once
	reaped   chan struct{}        // closed when the worker has no child left
	pumpDone chan struct{}        // closed when the output pump has ended
	done     chan struct{}        // closed once the end is recorded
	replies  chan termReply       // terminal replies to write to the program

	inMu    sync.Mutex    // serialises writes to the master
	askSem  chan struct{} // one ask at a time
	askWait chan struct{} // closed and replaced when an ask ends

	// published is the session's status as of the last change, kept by
	// publishLocked: what status and hello answer without taking mu, which
	// is held across event-log and manifest writes (fsyncs), so a slow disk
	// does not make a healthy worker miss its heartbeat.
	published atomic.Pointer[liveStatus]

	// The input state status reports, and what it was looked at for
	// (describeReadiness); inputMu guards them, never held with mu.
	inputMu     sync.Mutex
	inputKnown  bool
	inputState  string
	inputEvents uint64
	inputLooked time.Time

	// queries counts the output chunks that held a terminal query, and
	// repliedUpTo is the count the last reply written answered: a program
	// waiting for the reply to its query reads its terminal, but does not
	// wait for a person (lookLocked).
	queries     atomic.Uint64
	repliedUpTo atomic.Uint64

	mu           sync.Mutex // guards everything below
	elog         *eventlog.Writer
	scr          *termmodel.Screen
	man          Manifest
	status       Status
	exit         ExitInfo
	changed      chan struct{} // closed and replaced on every change
	bytes        uint64
	asks         uint64
	lastOutput   time.Time
	lastActivity time.Time
	subs         map[*subscriber]struct{}
	inflight     int
	logErr       bool

	// Asks (see ask.go).
	prompt        *termmodel.Prompt                  // learned when the last ask began or ended
	typed         bool                               // an ask has typed into the program
	bytesAtAskEnd uint64                             // output count when the last ask ended
	runningAsks   map[string]context.CancelCauseFunc // by askParams.ID
	canceledAsks  map[string]struct{}                // cancels that overtook their ask

	// Readiness (readiness.go): the kernel's word on whether the program
	// waits for input, and the prompt learned at its ready points.
	probe      *ttyready.Probe // nil where the terminal cannot be probed
	pm         *termmodel.PromptModel
	pmReader   int              // the process pm was learned from
	queryAt    time.Time        // when output last held a terminal query
	incomplete *incompleteInput // what the last ask left waiting, if anything
	inputSeen  bool             // anything was typed into the program
	// inputWaiter is the program's wait when input was last typed, at
	// inputAt (readiness.go).
	// An agent CLI's state (agentstate.go); nil tracker for other programs.
	agent         agentstate.Agent
	tracker       *agentstate.Tracker
	classifyTimer *time.Timer
	classifyFirst time.Time  // the first output not yet classified
	hooks         HookReport // whether its hooks are wired, and the calls taken (hooks.go)
	// promptShown is the prompt id the screen last showed, first seen at
	// promptShownAt (approve lets a fresh prompt settle).
	promptShown   string
	promptShownAt time.Time
	inputWaiter   ttyready.Waiter
	inputAt       time.Time
	inputBytes    uint64 // output when input was last typed
}

// screenLocked feeds the queued output to the screen model and returns it.
// Every reader of the screen goes through it.
func (w *worker) screenLocked() *termmodel.Screen {
	w.scr.Flush()
	return w.scr
}

// startWorker records the session, opens its socket and PTY and starts the
// program. On error nothing is left running and the error is the reason
// for people, naming the cause and the path ("exec /x: no such file or
// directory", "working directory /d: no such file or directory").
//
// The command and the working directory are checked before anything is
// opened, so the common failures cost nothing to undo; exec is still the
// judge (a file can vanish, or sit on a noexec mount), and its error is
// turned into the same words.
func startWorker(ctx context.Context, spec workerSpec, log zerolog.Logger) (*worker, error) {
	unix.Umask(0o077)
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		log.Warn().Err(err).Msg("cannot become a child subreaper; orphaned descendants may escape stop")
	}
	if err := checkCwd(spec.Cwd); err != nil {
		return nil, err
	}
	path, err := lookPath(spec.Argv[0], spec.Env, spec.Cwd)
	if err != nil {
		return nil, err
	}
	w := &worker{
		spec: spec, log: log,
		exitc: make(chan unix.WaitStatus, 1), reaped: make(chan struct{}), pumpDone: make(chan struct{}),
		done: make(chan struct{}), replies: make(chan termReply, 64), askSem: make(chan struct{}, 1),
		askWait: make(chan struct{}), changed: make(chan struct{}),
		subs:        map[*subscriber]struct{}{},
		runningAsks: map[string]context.CancelCauseFunc{}, canceledAsks: map[string]struct{}{},
	}
	// The undo steps close over w, never over a named result: a failing
	// return must not nil out what they close (that was a panic on every
	// failed spawn).
	var cleanup []func()
	ok := false
	defer func() {
		if !ok {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	if w.elog, err = eventlog.Open(spec.SessionDir, spec.LogCap); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { w.elog.Close() })

	os.Remove(spec.Socket)
	if w.ln, err = net.Listen("unix", spec.Socket); err != nil {
		return nil, fmt.Errorf("listen on the session socket: %w", err)
	}
	cleanup = append(cleanup, func() { w.ln.Close(); os.Remove(spec.Socket) })
	if err = os.Chmod(spec.Socket, 0o600); err != nil {
		return nil, err
	}

	if w.master, w.slave, err = openPTY(spec.Cols, spec.Rows); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { w.master.Close(); w.slave.Close() })

	w.token = newToken()
	w.tokenDigest = tokenDigestOf(w.token)
	// The agent CLI's hooks, wired by an overlay in the command run, not
	// in the one recorded (hooks.go).
	argv, env, hooks := hookOverlay(spec.Keep.Agent, spec.Argv, spec.Env, spec.Hooks, spec.HooksOff, spec.SessionDir)
	w.hooks = hooks
	cmd := &exec.Cmd{
		Path: path, Args: argv, Dir: spec.Cwd, Env: withEnv(env, TokenEnv+"="+w.token),
		Stdin: w.slave, Stdout: w.slave, Stderr: w.slave,
		SysProcAttr: &syscall.SysProcAttr{
			Setsid: true, Setctty: true, Ctty: 0,
			// The program dies with its worker (with the thread that
			// started it, which the reaper keeps alive).
			Pdeathsig: syscall.SIGKILL,
		},
	}
	startc := make(chan error, 1)
	go w.reap(cmd, startc)
	if err = <-startc; err != nil {
		return nil, cleanStartError(err, spec, path)
	}
	ok = true // w.pid is set: see reap

	w.scr = termmodel.New(spec.Cols, spec.Rows, w.queueReply)
	if os.Getenv(AskSignalEnv) == SignalPrompt {
		log.Info().Msg(AskSignalEnv + "=prompt: asks go by the look of the prompt")
	} else if w.probe, err = ttyready.New(w.master); err != nil {
		log.Warn().Err(err).Msg("cannot probe the terminal; asks fall back to the look of the prompt")
		w.probe, err = nil, nil
	}
	now := time.Now().UTC()
	st, _ := readProcStat(os.Getpid())
	w.status = StatusRunning
	w.man = Manifest{
		Name: spec.Name, Argv: spec.Argv, Cwd: spec.Cwd, EnvKeys: spec.EnvKeys, Cols: spec.Cols, Rows: spec.Rows,
		Status: StatusRunning, CreatedAt: spec.CreatedAt, StartedAt: now,
		WorkerPID: os.Getpid(), WorkerStart: st.start, ProgramPID: w.pid, Socket: spec.Socket,
		Worktree: spec.Worktree, RestartState: spec.Keep,
	}
	w.startAgentState()
	if err := writeManifest(spec.SessionDir, &w.man); err != nil {
		log.Error().Err(err).Msg("write manifest")
	}
	ev := Event{Type: EventMarker, Text: fmt.Sprintf("started pid %d, %dx%d", w.pid, spec.Cols, spec.Rows)}
	w.appendLocked(&ev)
	go w.pump()
	go w.replyPump(ctx)
	log.Info().Int("pid", w.pid).Str("program", filepath.Base(spec.Argv[0])).Msg("session started")
	return w, nil
}

// checkCwd says why dir cannot be the program's working directory, in the
// words cleanStartError uses for the same failure at exec.
func checkCwd(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("working directory %s: %w", dir, errnoOf(err))
	}
	if !fi.IsDir() {
		return fmt.Errorf("working directory %s: %w", dir, syscall.ENOTDIR)
	}
	if err := unix.Access(dir, unix.X_OK); err != nil {
		return fmt.Errorf("working directory %s: %w", dir, err)
	}
	return nil
}

// errnoOf strips the operation and path from a *PathError, so a message
// names the path once ("exec /x: no such file or directory", not
// "exec /x: stat /x: no such file or directory").
func errnoOf(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// cleanStartError turns exec's errors into a reason for people.
func cleanStartError(err error, spec workerSpec, path string) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "chdir" {
		return fmt.Errorf("working directory %s: %w", spec.Cwd, pe.Err)
	}
	return fmt.Errorf("exec %s: %w", path, errnoOf(err))
}

// lookPath finds argv0 in the PATH of env, as the program's own shell would.
// Its errors read "exec <path>: <cause>".
func lookPath(argv0 string, env []string, cwd string) (string, error) {
	if strings.Contains(argv0, "/") {
		p := argv0
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("exec %s: %w", p, err)
		}
		return p, nil
	}
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		p := filepath.Join(dir, argv0)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec %q: executable file not found in PATH (%s)", argv0, pathEnv)
}

// executable says why p cannot be executed, without its path.
func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return errnoOf(err)
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode()&0o111 == 0 {
		return errors.New("permission denied (not executable)")
	}
	return nil
}

// reap starts the program on a locked OS thread (PR_SET_PDEATHSIG fires
// when the thread that forked exits, so it must live as long as the
// program), then reaps every child: the program and the orphans the worker
// adopts as subreaper. It closes reaped when no child is left.
func (w *worker) reap(cmd *exec.Cmd, startc chan<- error) {
	runtime.LockOSThread()
	if err := cmd.Start(); err != nil {
		startc <- err
		return
	}
	// The pid is taken here, before the start is reported: a program that
	// ends at once is reaped below, and Release makes cmd.Process.Pid -1,
	// so a read of it after startc could see -1 (a status that said
	// "program -1").
	pid := cmd.Process.Pid
	w.pid = pid
	startc <- nil
	defer close(w.reaped)
	for {
		var ws unix.WaitStatus
		p, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			cmd.Process.Release()
			return
		}
		if p == pid {
			w.exitc <- ws
		}
	}
}

// pump reads the program's output until the PTY is closed.
func (w *worker) pump() {
	defer close(w.pumpDone)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.readMaster(buf)
		if n > 0 {
			w.recordOutput(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (w *worker) recordOutput(p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := Event{Type: EventOutput, Data: p}
	w.appendLocked(&ev)
	// Noted before the screen answers the query (its reply may be written
	// before Queue returns).
	// Counted before the screen answers the query: its reply may be
	// written before Queue returns.
	if termmodel.HasQuery(p) {
		w.queries.Add(1)
		w.queryAt = time.Now()
	}
	w.scr.Queue(p)
	w.outputForStateLocked()
	w.bytes += uint64(len(p))
	w.lastOutput = time.Now()
	w.lastActivity = w.lastOutput
	for s := range w.subs {
		s.push(p)
	}
	w.broadcastLocked()
}

// appendLocked writes ev to the event log. The program runs on whatever
// the log does: a failing log (a full disk) is reported once per outage,
// the log counts what it could not record and writes a gap record once it
// can write again (see eventLog.append).
func (w *worker) appendLocked(ev *Event) {
	err := w.elog.Append(ev)
	switch {
	case err != nil && !w.logErr:
		w.logErr = true
		w.log.Error().Err(err).Msg("event log write failed; the session runs on, and what is not recorded is counted")
	case err == nil && w.logErr:
		w.logErr = false
		w.log.Info().Msg("event log writable again; the gap is recorded")
	}
	w.publishLocked()
}

func (w *worker) broadcastLocked() {
	w.publishLocked()
	close(w.changed)
	w.changed = make(chan struct{})
}

// publishLocked stores the status liveStatus answers with. Every change of
// what it holds publishes before mu is released (an event appended, a
// broadcast, or explicitly), so an answer read without mu is one that a
// reader under mu could have seen.
func (w *worker) publishLocked() {
	st := liveStatus{Name: w.spec.Name, Status: w.status, WorkerPID: os.Getpid(), ProgramPID: w.pid,
		Bytes: w.bytes, Events: w.elog.Seq(), Asks: w.asks, LastActivity: w.lastActivity, Exit: w.exit}
	if w.scr != nil {
		st.Cols, st.Rows = w.scr.Size()
	}
	w.stateLocked(&st)
	w.published.Store(&st)
}

// termReply is a terminal's reply to a query, and the count of queries
// seen when the screen made it.
type termReply struct {
	data    []byte
	answers uint64
}

// queueReply hands a terminal reply to the reply pump; replies are dropped
// rather than block the output path when the program does not read. It
// runs while the screen is fed the query, so the count of queries seen
// includes the one it answers.
func (w *worker) queueReply(b []byte) {
	select {
	case w.replies <- termReply{data: b, answers: w.queries.Load()}:
	default:
	}
}

func (w *worker) replyPump(ctx context.Context) {
	for {
		select {
		case r := <-w.replies:
			w.writeInput(ctx, r.data, false)
			w.repliedUpTo.Store(r.answers)
		case <-w.done:
			return
		}
	}
}

// writeInput writes data to the program, recording it as an input event
// when record is set.
func (w *worker) writeInput(ctx context.Context, data []byte, record bool) error {
	w.inMu.Lock()
	defer w.inMu.Unlock()
	if record {
		w.mu.Lock()
		ev := Event{Type: EventInput, Data: data}
		w.appendLocked(&ev)
		w.inputSeen = true
		w.lastActivity = time.Now()
		w.publishLocked()
		// Until the program has run since (or a moment has passed), a
		// look must not take its wait from before the input for a wait
		// after it (see lookLocked).
		if w.probe != nil {
			w.inputWaiter, w.inputAt, w.inputBytes = w.probe.Look().Reader, time.Now(), w.bytes
		}
		w.mu.Unlock()
	}
	dl := time.Now().Add(inputTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	w.master.SetWriteDeadline(dl)
	_, err := w.master.Write(data)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return errorf(ErrBusy, "session %q is not reading its input; the input was not delivered in full, try again when it is", w.spec.Name)
		}
		return fmt.Errorf("write to session %q: %w", w.spec.Name, err)
	}
	return nil
}

// run serves the session socket until the program has ended, then records
// the end and returns the worker's exit status.
func (w *worker) run(ctx context.Context) int {
	serveCtx, cancelServe := context.WithCancel(context.WithoutCancel(ctx))
	var conns sync.WaitGroup
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			c, err := w.ln.Accept()
			if err != nil {
				return
			}
			if !w.admit(c) {
				continue
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				w.serveConn(serveCtx, c)
			}()
		}
	}()

	var ws unix.WaitStatus
	select {
	case ws = <-w.exitc:
	case <-ctx.Done():
		w.log.Info().Msg("worker told to stop; stopping the program")
		w.signalTree(syscall.SIGTERM)
		grace := time.NewTimer(DefaultStopGrace)
		tick := time.NewTicker(50 * time.Millisecond)
	wait:
		for killing := false; ; {
			select {
			case ws = <-w.exitc:
				break wait
			case <-grace.C:
				killing = true
			case <-tick.C:
				if killing {
					w.signalTree(syscall.SIGKILL)
				}
			}
		}
		grace.Stop()
		tick.Stop()
	}
	w.finish(ws)

	// Let the requests in flight see the end and answer, then close.
	deadline := time.Now().Add(2 * time.Second)
	for {
		w.mu.Lock()
		n, ch := w.inflight, w.changed
		w.mu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
		}
	}
	w.ln.Close()
	<-acceptDone
	cancelServe()
	conns.Wait()
	w.mu.Lock()
	if w.classifyTimer != nil {
		w.classifyTimer.Stop()
	}
	w.scr.Close()
	w.elog.Close()
	if w.probe != nil {
		w.probe.Close()
	}
	w.mu.Unlock()
	w.master.Close()
	return 0
}

// finish kills what the program left behind, drains its last output and
// records how it ended.
func (w *worker) finish(ws unix.WaitStatus) {
	// Everything still below the worker or in the program's session goes.
	deadline := time.Now().Add(5 * time.Second)
	for {
		members := sessionMembers(w.pid, os.Getpid(), 0)
		if len(members) == 0 {
			break
		}
		signalAll(0, members, syscall.SIGKILL)
		select {
		case <-w.reaped:
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			w.log.Warn().Ints("pids", members).Msg("processes of the session would not die")
			break
		}
	}
	select {
	case <-w.reaped:
	case <-time.After(time.Second):
	}
	// With the program gone, closing our copy of the terminal lets the
	// master read what is left and then see the hangup.
	w.slave.Close()
	w.master.SetReadDeadline(time.Now().Add(2 * time.Second))
	<-w.pumpDone

	info := ExitInfo{Name: w.spec.Name, Status: StatusExited, EndedAt: time.Now().UTC()}
	switch {
	case ws.Exited():
		code := ws.ExitStatus()
		info.ExitCode = &code
		info.Termination = TermCleanExit
		if code != 0 {
			info.Termination = TermNonzeroExit
		}
	case ws.Signaled():
		info.Signal = unix.SignalName(ws.Signal())
		info.Termination = TermSignalExit
	}
	w.mu.Lock()
	ev := Event{Type: EventExit, ExitCode: info.ExitCode, Signal: info.Signal, Termination: info.Termination}
	w.appendLocked(&ev)
	w.status = StatusExited
	w.exit = info
	m := &w.man
	m.Status, m.Termination, m.ExitCode, m.Signal = StatusExited, info.Termination, info.ExitCode, info.Signal
	m.EndedAt = &info.EndedAt
	m.Bytes, m.Events, m.Asks = w.bytes, w.elog.Seq(), w.asks
	if err := writeManifest(w.spec.SessionDir, m); err != nil {
		w.log.Error().Err(err).Msg("write manifest")
	}
	close(w.done)
	w.broadcastLocked()
	w.mu.Unlock()
	w.log.Info().Str("termination", string(info.Termination)).Msg("session ended")
}

// signalTree sends sig to the program's process group, its session and
// every process below the worker (which, as subreaper, inherits orphans,
// even those that started their own session).
func (w *worker) signalTree(sig syscall.Signal) {
	signalAll(w.pid, sessionMembers(w.pid, os.Getpid(), 0), sig)
}

// refuseTimeout bounds writing a refusal to a peer that does not read it.
const refuseTimeout = 2 * time.Second

// admit says whether the worker serves the connection c, by its peer's
// uid (SO_PEERCRED, as the daemon checks its own socket): only the uid the
// worker runs as, which is its daemon's, may call it. The socket's mode
// alone (0600) is not enough: a directory opened to others, or a socket
// whose mode changed, let another user type into the session. A refused
// peer gets permission_denied and is logged with its pid, uid and
// executable, as the daemon logs its own refusals; nothing else happens.
// No worker call is one a session's own processes need beyond this: they
// run as the user too.
func (w *worker) admit(c net.Conn) bool {
	peer, err := rpc.PeerExe(c)
	if err != nil {
		w.log.Warn().Err(err).Msg("cannot read peer credentials; closing")
		c.Close()
		return false
	}
	if peer.UID == os.Getuid() {
		return true
	}
	w.log.Warn().Int("peer_pid", peer.PID).Int("peer_uid", peer.UID).Str("peer_exe", peer.Exe).
		Msg("connection from another user refused")
	go rpc.Refuse(c, rpc.Errorf(codePermissionDenied, "uid %d may not use this session's worker (it serves uid %d)", peer.UID, os.Getuid()), refuseTimeout)
	return false
}

func (w *worker) serveConn(ctx context.Context, c net.Conn) {
	// A request counts as in flight until its reply is written (which
	// OnRequestDone follows), so the worker never closes a connection
	// between an answer and its delivery.
	var counted sync.Map
	sc := rpc.NewServerConn(c, rpc.ServeOptions{
		ToError:    encodeError,
		MayUpgrade: func(method string) bool { return method == mAttachStream },
		OnRequestDone: func(req *rpc.Request, _ time.Duration, _ *rpc.Error) {
			if _, ok := counted.LoadAndDelete(req); ok {
				w.mu.Lock()
				w.inflight--
				w.broadcastLocked()
				w.mu.Unlock()
			}
		},
		OnPanic: func(req *rpc.Request, v any, stack []byte) {
			w.log.Error().Str("method", req.Method).Interface("panic", v).Bytes("stack", stack).Msg("handler panic")
		},
	})
	sc.Serve(ctx, func(ctx context.Context, req *rpc.Request) (any, error) {
		w.mu.Lock()
		w.inflight++
		w.mu.Unlock()
		counted.Store(req, true)
		return w.handle(ctx, sc, req)
	})
}

func decodeParams(req *rpc.Request, v any) error {
	if len(req.Params) == 0 {
		return nil
	}
	if err := json.Unmarshal(req.Params, v); err != nil {
		return errorf(ErrInvalid, "params of %s: %v", req.Method, err)
	}
	return nil
}

// handle serves one request by the worker's route table.
func (w *worker) handle(ctx context.Context, sc *rpc.Conn, req *rpc.Request) (any, error) {
	if r, ok := workerRoutes[req.Method]; ok {
		return r(w, ctx, sc, req)
	}
	return nil, rpc.Errorf(codeUnknownMethod, "worker has no method %q", req.Method)
}

// liveStatus is the session's status as last published: it takes no lock,
// so it never waits for a disk write.
func (w *worker) liveStatus() liveStatus {
	if st := w.published.Load(); st != nil {
		return *st
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.publishLocked()
	return *w.published.Load()
}

func (w *worker) requireRunning(op string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.requireRunningLocked(op)
}

func (w *worker) requireRunningLocked(op string) error {
	if w.status != StatusRunning {
		return statusError(w.spec.Name, w.status, w.exit.Termination, op)
	}
	return nil
}

// statusError is the ErrInvalidStatus for op on a session in status st.
func statusError(name string, st Status, term Termination, op string) error {
	how := string(st)
	if term != "" {
		how += " (" + string(term) + ")"
	}
	fix := "wait for it to finish starting"
	if st.Terminal() {
		fix = fmt.Sprintf("spawn it again, or remove it with agentctl rm %s", name)
	} else if st == StatusExiting {
		fix = "it is being stopped"
	} else if st == StatusBroken {
		fix = fmt.Sprintf("its manifest is missing or damaged (agentctl status %s says why); agentctl stop %s ends whatever of it runs, agentctl rm --force %s removes it", name, name, name)
	}
	return errorf(ErrInvalidStatus, "session %q is %s; %s needs a running session: %s", name, how, op, fix)
}

func (w *worker) resize(cols, rows int) error {
	if err := validateSize(cols, rows); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.requireRunningLocked("resize"); err != nil {
		return err
	}
	if err := setWinsize(w.master, cols, rows); err != nil {
		return err
	}
	w.screenLocked().Resize(cols, rows)
	ev := Event{Type: EventResize, Cols: cols, Rows: rows}
	w.appendLocked(&ev)
	w.man.Cols, w.man.Rows = cols, rows
	if err := writeManifest(w.spec.SessionDir, &w.man); err != nil {
		w.log.Error().Err(err).Msg("write manifest")
	}
	w.broadcastLocked()
	return nil
}

func (w *worker) stop(ctx context.Context, p stopParams) (*ExitInfo, error) {
	sig := syscall.Signal(p.Signal)
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	grace := p.Grace
	if grace <= 0 {
		grace = DefaultStopGrace // a Manager from before it filled Grace
	}
	w.mu.Lock()
	if w.status == StatusExited {
		info := w.exit
		info.AlreadyEnded = true
		w.mu.Unlock()
		return &info, nil
	}
	if w.status == StatusRunning {
		w.status = StatusExiting
		w.man.Status = StatusExiting
		w.man.StopAsked = true // restart always leaves a stop alone
		if err := writeManifest(w.spec.SessionDir, &w.man); err != nil {
			w.log.Error().Err(err).Msg("write manifest")
		}
	}
	ev := Event{Type: EventSignal, Signal: unix.SignalName(sig)}
	w.appendLocked(&ev)
	w.broadcastLocked()
	w.mu.Unlock()
	w.log.Info().Str("signal", unix.SignalName(sig)).Dur("grace", grace).Msg("stopping session")

	w.signalTree(sig)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-w.done:
		return w.exitInfo(), nil
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	w.mu.Lock()
	ev = Event{Type: EventSignal, Signal: "SIGKILL"}
	w.appendLocked(&ev)
	w.mu.Unlock()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		w.signalTree(syscall.SIGKILL)
		select {
		case <-w.done:
			return w.exitInfo(), nil
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (w *worker) exitInfo() *ExitInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	info := w.exit
	return &info
}

// recordChannelAsk puts an ask answered through a channel into the event
// log and the asks counter, like an ask typed into the terminal.
func (w *worker) recordChannelAsk(p recordParams) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := Event{Type: EventAsk, Text: p.Question}
	w.appendLocked(&ev)
	ev = Event{Type: EventAnswer, Text: p.Answer, Reason: p.Reason}
	w.appendLocked(&ev)
	w.asks++
	w.publishLocked()
}

// subscriber is an attached terminal's queue of output.
type subscriber struct {
	ch       chan []byte
	overflow bool // set under worker.mu when output was dropped
}

func (s *subscriber) push(p []byte) {
	if s.overflow {
		return
	}
	select {
	case s.ch <- append([]byte(nil), p...):
	default:
		s.overflow = true
	}
}

// attachStream answers mAttachStream: when the session runs, the
// connection becomes its terminal (see streamTerminal).
func (w *worker) attachStream() (any, error) {
	if err := w.requireRunning("attach"); err != nil {
		return nil, err
	}
	return &rpc.Upgrade{Stream: w.streamTerminal}, nil
}

// streamTerminal is an attached terminal over a raw stream: the screen,
// then every output, is written to rw, and what is read from rw is typed
// into the program, until the session ends, the attacher hangs up, or ctx
// ends. An attacher too slow for the output gets a fresh repaint instead of
// what it missed. It counts as a request in flight, so a worker whose
// program ended writes the last output before it exits.
func (w *worker) streamTerminal(ctx context.Context, rw io.ReadWriter) error {
	w.mu.Lock()
	w.inflight++
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.inflight--
		w.broadcastLocked()
		w.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// Input: ends with the attacher's side of the stream; the
		// connection's close (after this function returns) ends the read.
		defer cancel()
		buf := make([]byte, 32<<10)
		for {
			n, err := rw.Read(buf)
			if n > 0 {
				if w.requireRunning("send") != nil || w.writeInput(ctx, buf[:n], true) != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return w.pumpOutput(ctx, func(b []byte) error {
		_, err := rw.Write(b)
		return err
	})
}

// attach streams the screen, then every output, to the connection as
// notifications until the session ends or the connection does: the
// mAttach of workers before mAttachStream, kept for their Managers.
func (w *worker) attach(ctx context.Context, sc *rpc.Conn) error {
	return w.pumpOutput(ctx, func(b []byte) error { return sc.Notify(nOutput, outputNote{Data: b}) })
}

// pumpOutput sends the screen, then every output, to send until the
// session ends (after sending what is left) or ctx does. An attacher too
// slow for the output gets a fresh repaint instead of what it missed.
func (w *worker) pumpOutput(ctx context.Context, send func([]byte) error) error {
	sub := &subscriber{ch: make(chan []byte, 1024)}
	w.mu.Lock()
	if err := w.requireRunningLocked("attach"); err != nil {
		w.mu.Unlock()
		return err
	}
	rp := w.screenLocked().Repaint()
	w.subs[sub] = struct{}{}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.subs, sub)
		w.mu.Unlock()
	}()
	if err := send(rp); err != nil {
		return err
	}
	var batch []byte
	flush := func(first []byte) error {
		batch = append(batch[:0], first...)
	more:
		for len(batch) < 256<<10 {
			select {
			case p := <-sub.ch:
				batch = append(batch, p...)
			default:
				break more
			}
		}
		w.mu.Lock()
		if sub.overflow {
			for len(sub.ch) > 0 {
				<-sub.ch
			}
			sub.overflow = false
			batch = append(batch[:0], w.screenLocked().Repaint()...)
		}
		w.mu.Unlock()
		return send(batch)
	}
	for {
		select {
		case p := <-sub.ch:
			if err := flush(p); err != nil {
				return err
			}
		case <-w.done:
			for len(sub.ch) > 0 {
				if err := flush(<-sub.ch); err != nil {
					return err
				}
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
