package session

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Launcher starts session workers. The Manager hands it a worker's
// command, environment, log and its end of the spawn socket; the worker
// finds that socket on fd 3, or on its standard input when its argv holds
// SpecOnStdin (PrepareWorker moves it to fd 3 before RunWorker).
//
// Two launchers exist: ForkLauncher (the default: the daemon forks the
// worker, which then shares the daemon's cgroup, and inherits its seccomp
// filter and no_new_privs bit) and internal/sdunit's, which asks the
// systemd user manager to start each worker as a transient unit of its
// own, so it escapes the daemon's sandbox, gets a cgroup and limits of
// its own and outlives the daemon's unit.
type Launcher interface {
	// Kind names the launcher for logs and status: "fork" or "systemd".
	Kind() string
	// Launch starts a worker. The returned Launched reports its end.
	// Launch returns once the worker process runs (or could not start);
	// it never waits for the worker's report.
	Launch(ctx context.Context, spec LaunchSpec) (Launched, error)
}

// LaunchSpec is one worker to start.
type LaunchSpec struct {
	// Session is the session's name (a unit is named after it).
	Session string
	// Argv is the worker's command: WorkerCommand; a launcher that passes
	// the spawn socket on standard input appends SpecOnStdin.
	Argv []string
	// Env is the worker's whole environment.
	Env []string
	// Spec is the worker's end of the spawn socket pair. The launcher may
	// close its copy once Launch returns.
	Spec *os.File
	// Log receives the worker's stdout and stderr (worker.log).
	Log *os.File
	// Limits bound the session's resources; only a launcher that gives
	// each session a cgroup (LimitsSupported) applies them.
	Limits Limits
	// Description is a line for people ("agentd session w1: claude"),
	// at most MaxDescription bytes.
	Description string
}

// MaxDescription bounds LaunchSpec.Description: a unit's description is
// a line in systemctl's listings, not the whole command.
const MaxDescription = 200

// Describe is the Description of a session running argv.
func Describe(name string, argv []string) string {
	d := "agentd session " + name + ": " + strings.Join(argv, " ")
	if len(d) > MaxDescription {
		cut := MaxDescription - len("...")
		for cut > 0 && !utf8.RuneStart(d[cut]) {
			cut--
		}
		d = d[:cut] + "..."
	}
	return d
}

// Limits are a session's resource bounds, applied to its own cgroup (the
// unit's MemoryMax= and CPUWeight=). Zero is unset: no bound, or the
// default the launcher was configured with.
type Limits struct {
	// MemoryMax is the memory the session's processes may use, in bytes.
	MemoryMax int64
	// CPUWeight is the session's share of CPU against others, 1 to 10000
	// (systemd's CPUWeight=; 100 is every unit's default).
	CPUWeight int
}

// MaxCPUWeight is the largest CPUWeight systemd accepts.
const MaxCPUWeight = 10000

// IsZero says no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

// Validate refuses limits no cgroup can take.
func (l Limits) Validate() error {
	if l.MemoryMax < 0 {
		return errorf(ErrInvalid, "memory limit %d is negative; give a size such as 4G", l.MemoryMax)
	}
	if l.CPUWeight < 0 || l.CPUWeight > MaxCPUWeight {
		return errorf(ErrInvalid, "cpu weight %d is out of range; give 1 to %d (100 is the default share)", l.CPUWeight, MaxCPUWeight)
	}
	return nil
}

// Launched is a started worker.
type Launched interface {
	// Exited is closed once the worker process has ended.
	Exited() <-chan struct{}
	// Kill ends the worker at once (with everything it started, where the
	// launcher can).
	Kill()
	// Unit is the systemd unit the worker runs as, "" for a forked one.
	Unit() string
}

// SpecOnStdin, as the last argument of `agentd worker`, says the spawn
// socket is the worker's standard input rather than fd 3: a unit started
// by the user manager can be given its standard streams, not other
// descriptors.
const SpecOnStdin = "--spec-on-stdin"

// PrepareWorker is called by `agentd worker` before RunWorker: with
// SpecOnStdin among args it moves the spawn socket from standard input to
// fd 3, where RunWorker reads it, and puts /dev/null on standard input.
func PrepareWorker(args []string) error {
	found := false
	for _, a := range args {
		found = found || a == SpecOnStdin
	}
	if !found {
		return nil
	}
	if err := unix.Dup3(0, spawnFD, 0); err != nil {
		return fmt.Errorf("move the spawn socket to fd %d: %w", spawnFD, err)
	}
	null, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer unix.Close(null)
	return unix.Dup3(null, 0, 0)
}

// ForkLauncher starts workers as children of the daemon, detached in a
// process session of their own: what agentd does without a user manager
// (make run, a container). Such a worker shares the daemon's cgroup and
// inherits everything the kernel passes across fork and exec: a seccomp
// filter, the no_new_privs bit, namespaces.
type ForkLauncher struct{}

// Kind is "fork".
func (ForkLauncher) Kind() string { return "fork" }

// Launch forks the worker.
func (ForkLauncher) Launch(ctx context.Context, s LaunchSpec) (Launched, error) {
	if !s.Limits.IsZero() {
		return nil, errorf(ErrInvalid, "session limits (memory max, cpu weight) need a systemd user manager to give the session a cgroup of its own, and this agentd forks its workers (no user manager reachable); spawn without them")
	}
	cmd := &exec.Cmd{Path: s.Argv[0], Args: s.Argv, Env: s.Env, Dir: "/",
		Stdout: s.Log, Stderr: s.Log, ExtraFiles: []*os.File{s.Spec},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if filepath.Base(s.Argv[0]) == s.Argv[0] {
		if p, err := exec.LookPath(s.Argv[0]); err == nil {
			cmd.Path = p
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start session worker %s: %w", s.Argv[0], err)
	}
	f := &forked{cmd: cmd, exited: make(chan struct{})}
	// The worker is our child until we exit; this goroutine reaps it so it
	// never lingers as a zombie. It ends when the worker does (which may be
	// after the Manager is closed: the worker outlives it by design).
	go func() {
		cmd.Wait()
		close(f.exited)
	}()
	return f, nil
}

type forked struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func (f *forked) Exited() <-chan struct{} { return f.exited }
func (f *forked) Kill()                   { f.cmd.Process.Kill() }
func (f *forked) Unit() string            { return "" }

// Inherited says what a forked worker would inherit from this process
// that takes rights from session programs, read from /proc/self/status:
// "seccomp filter", "no_new_privs". Empty when nothing is.
func Inherited() []string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		v = strings.TrimSpace(v)
		switch {
		case k == "Seccomp" && v != "0":
			out = append(out, "seccomp filter")
		case k == "NoNewPrivs" && v != "0":
			out = append(out, "no_new_privs")
		}
	}
	return out
}

// UnitOf is the systemd unit a process runs as, read from its cgroup
// (/proc/PID/cgroup): the last component of its path when that is a
// service or a scope, "" otherwise or when it cannot be read.
func UnitOf(pid int) string {
	if pid <= 0 {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	// The unified hierarchy's line (0::) first, then systemd's named one
	// (cgroup v1).
	var best string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" || parts[1] == "name=systemd" {
			leaf := filepath.Base(parts[2])
			if strings.HasSuffix(leaf, ".service") || strings.HasSuffix(leaf, ".scope") {
				if parts[1] == "name=systemd" || best == "" {
					best = leaf
				}
			}
		}
	}
	return best
}
