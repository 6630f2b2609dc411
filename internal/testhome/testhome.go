// Package testhome gives a test binary a private home for its whole run, so
// that tests are hermetic: HOME, the XDG base directories, TMPDIR and
// TMUX_TMPDIR point into one fresh directory under the system temp
// directory, removed when the tests end. Whatever the tests, or the programs
// they start in sessions, write there (bash's and python's history, fish's
// and Chromium's state, asciinema's config, agentd's state directory, built
// binaries, t.TempDir) is gone after the run, and the person's own home and
// temp directory are as they were.
//
// Main also checks that: it lists the real HOME and temp directory before
// the tests and again after removing the private home, and names every
// entry that appeared (see Snapshot for what is compared and what is
// ignored). With $AGENTD_TESTHOME_CHECK=fail, which `make test` sets, such
// an entry fails the run; without it, it is a warning on stderr, because
// on a machine shared with other work (other people's builds and tests
// write into the same /tmp and HOME while these run) an entry that
// appeared is not always this run's. The proof is `make test` on a quiet
// machine.
//
// A TestMain calls it as its last word:
//
//	func TestMain(m *testing.M) { os.Exit(testhome.Main(m)) }
//
// or, with work of its own, as os.Exit(testhome.Run(func() int { ...; return m.Run() })).
//
// It imports nothing from agentd.
package testhome

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Prefix begins the name of every private home in the system temp
// directory, so that a test binary's check can tell its siblings' homes
// (go test runs packages in parallel) from a leak. It is short, and the
// private home is itself TMPDIR, because session sockets go a few levels
// under a test's temp directory and a socket's path holds at most 107
// bytes.
const Prefix = "adt"

// CheckEnv is the environment variable that makes an entry left in the
// real HOME or temp directory fail the run ("fail"); `make test` sets it.
const CheckEnv = "AGENTD_TESTHOME_CHECK"

// Main runs m inside a private home and returns the exit status for
// os.Exit: m's, or 1 when the tests left something in the real HOME or
// temp directory (each entry is named on stderr).
func Main(m *testing.M) int { return Run(m.Run) }

// Run is Main for a TestMain with work of its own around m.Run (building
// binaries, say): run is called inside the private home and returns the
// status.
func Run(run func() int) int {
	if os.Getenv(RootEnv) != "" {
		// A test binary started by a test (a second process for a test,
		// a worker): it lives in its parent's private home, which the
		// parent removes and checks. Its own check would count the
		// parent's temp directories, made while it ran, as its leaks.
		return run()
	}
	realHome, _ := os.UserHomeDir()
	realTmp = os.TempDir()
	before := Snapshot(realHome, realTmp)
	root, err := Enter()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testhome:", err)
		return 1
	}
	code := run()
	if err := os.RemoveAll(root); err != nil {
		fmt.Fprintf(os.Stderr, "testhome: removing the private home %s: %v\n", root, err)
		code = 1
	}
	// A short directory a test did not remove is this run's for certain.
	shortMu.Lock()
	for d := range shortDirs {
		if _, err := os.Lstat(d); err == nil {
			fmt.Fprintf(os.Stderr, "testhome: a test left its short directory %s\n", d)
			os.RemoveAll(d)
			code = 1
		}
	}
	shortMu.Unlock()
	if left := before.Added(Snapshot(realHome, realTmp)); len(left) > 0 {
		strict := os.Getenv(CheckEnv) == "fail"
		what := "warning: these appeared outside the tests' private home while they ran (another program's, or a leak; " + CheckEnv + "=fail makes it an error)"
		if strict {
			what = "the tests left these outside their private home"
		}
		fmt.Fprintf(os.Stderr, "testhome: %s:\n  %s\n", what, strings.Join(left, "\n  "))
		if strict && code == 0 {
			code = 1
		}
	}
	return code
}

// realTmp is the system temp directory before Enter moved TMPDIR.
var realTmp = os.TempDir()

var (
	shortMu   sync.Mutex
	shortDirs = map[string]bool{}
)

// ShortDir is a new directory with a short path, for Unix sockets: a
// daemon's runtime directory holds sockets a few levels down, and a
// socket's path holds at most 107 bytes, which a directory inside the
// private home may not leave room for. It is made in the real temp
// directory, named with Prefix, removed when tb ends; Main fails the run
// if one is still there at the end.
func ShortDir(tb testing.TB) string {
	tb.Helper()
	d, err := os.MkdirTemp(realTmp, Prefix)
	if err != nil {
		tb.Fatal(err)
	}
	os.Chmod(d, 0o700)
	// Owned like a private home, so a run after a crash removes it.
	os.WriteFile(filepath.Join(d, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
	shortMu.Lock()
	shortDirs[d] = true
	shortMu.Unlock()
	tb.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// Enter makes a private home and points this process's environment at it
// (so every program a test starts inherits it); it returns the directory,
// which the caller removes. The go command keeps the real build and module
// caches and its env file: a test that builds a binary must not rebuild
// the world or download modules into a home that is thrown away.
func Enter() (string, error) {
	keepGo()
	removeStale(os.TempDir())
	root, err := os.MkdirTemp("", Prefix) // short: sockets go under it, and sun_path is ~108 bytes
	if err != nil {
		return "", err
	}
	// Whose it is: a binary that dies without cleaning up (a -timeout
	// panics the test binary) leaves it, and the next run removes it.
	if err := os.WriteFile(filepath.Join(root, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		os.RemoveAll(root)
		return "", err
	}
	dirs := map[string]string{
		"HOME":            "home",
		"XDG_CONFIG_HOME": "home/.config",
		"XDG_CACHE_HOME":  "home/.cache",
		"XDG_DATA_HOME":   "home/.local/share",
		"XDG_STATE_HOME":  "home/.local/state",
		"TMPDIR":          "",
		"TMUX_TMPDIR":     "",
	}
	for k, rel := range dirs {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(p, 0o700); err != nil {
			os.RemoveAll(root)
			return "", err
		}
		os.Setenv(k, p)
	}
	// The runtime directory is the test's own business (each daemon test
	// makes one); one inherited from the person's session is theirs.
	os.Unsetenv("XDG_RUNTIME_DIR")
	// So is the session bus: a daemon under test shows desktop
	// notifications on it (notifications = true by default), which must
	// never reach the person's desktop. Tests of notifications start a
	// bus of their own.
	os.Unsetenv("DBUS_SESSION_BUS_ADDRESS")
	os.Setenv("HISTFILE", filepath.Join(root, "home", ".bash_history"))
	os.Setenv(RootEnv, root)
	return root, nil
}

// RootEnv names the private home in the environment of every process the
// tests start, so a test binary started by a test knows it is inside one.
const RootEnv = "AGENTD_TESTHOME"

// ownerFile holds the pid of the test binary a private home belongs to.
const ownerFile = ".owner"

// removeStale removes the private homes in tmp whose test binary is gone
// (no process has its pid; a pid reused by another process only puts the
// removal off to a later run). A home without its owner file is left: it
// is still being made.
func removeStale(tmp string) {
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), Prefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue // its binary (or a process of that number) still runs
		}
		os.RemoveAll(dir)
	}
}

// keepGo pins the go command's caches and env file to where they are now,
// before HOME and the XDG directories move.
func keepGo() {
	if os.Getenv("GOCACHE") == "" {
		if d, err := os.UserCacheDir(); err == nil {
			os.Setenv("GOCACHE", filepath.Join(d, "go-build"))
		}
	}
	if os.Getenv("GOPATH") == "" {
		if h, err := os.UserHomeDir(); err == nil {
			os.Setenv("GOPATH", filepath.Join(h, "go"))
		}
	}
	if os.Getenv("GOENV") == "" {
		if d, err := os.UserConfigDir(); err == nil {
			os.Setenv("GOENV", filepath.Join(d, "go", "env"))
		}
	}
}

// State is what Snapshot saw: a path for every entry, with the
// modification time of the files in HOME itself (history files are
// appended to, not created).
type State map[string]int64

// Snapshot lists what a test run could leave behind: the entries of the
// temp directory; HOME's entries two levels down, and those under
// .local/state, .local/share, .config and .cache one further; the
// modification times of HOME's own files. It ignores the private homes of
// sibling test binaries (Prefix), the go command's work directories
// (go-build*, of builds running beside the tests), the X servers' socket
// directory (.X11-unix, made by the first X server on the machine), their lock
// files (.X<n>-lock, removed when a sibling's Xvfb exits, and .tX<n>-lock,
// which an X server writes and links to .X<n>-lock as it starts, for a
// moment: a snapshot once caught one) and xvfbtest's
// reservations (xvfbtest-<n>.lock, removed when its server stops): each is
// either checked by its owner or lives exactly as long as a process.
func Snapshot(home, tmp string) State {
	s := State{}
	list := func(dir string, depth int) {
		var walk func(string, int)
		walk = func(d string, left int) {
			entries, err := os.ReadDir(d)
			if err != nil {
				return
			}
			for _, e := range entries {
				p := filepath.Join(d, e.Name())
				s[p] = 0
				if e.Type().IsRegular() && d == home {
					if fi, err := e.Info(); err == nil {
						s[p] = fi.ModTime().UnixNano()
					}
				}
				if e.IsDir() && left > 1 {
					walk(p, left-1)
				}
			}
		}
		walk(dir, depth)
	}
	if home != "" {
		list(home, 2)
		for _, d := range []string{".local/state", ".local/share", ".config", ".cache"} {
			list(filepath.Join(home, d), 1)
		}
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, Prefix) || strings.HasPrefix(n, "go-build") || strings.HasPrefix(n, "xvfbtest-") ||
			n == ".X11-unix" || ((strings.HasPrefix(n, ".X") || strings.HasPrefix(n, ".tX")) && strings.HasSuffix(n, "-lock")) {
			continue
		}
		s[filepath.Join(tmp, n)] = 0
	}
	return s
}

// Added lists, sorted, the entries of after that s lacks or whose
// modification time changed.
func (s State) Added(after State) []string {
	var out []string
	for p, t := range after {
		if old, ok := s[p]; !ok || old != t {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
