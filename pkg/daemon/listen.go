package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/limits"
)

// ErrAlreadyRunning is returned by Run when another agentd holds the lock.
var ErrAlreadyRunning = errors.New("agentd is already running")

// privateDir names a directory the daemon holds to the socket directory's
// rules, for the messages that refuse it: what it is, and how to use
// another one instead.
type privateDir struct {
	what      string // "socket directory"
	elsewhere string // "choose another socket path with --socket"
}

var (
	socketDir = privateDir{"socket directory", "choose another socket path with --socket"}
	stateDir  = privateDir{"state directory", "point XDG_STATE_HOME at a directory of yours"}
)

// ensurePrivateDir creates dir (0700) when missing, then verifies with lstat
// that it is a real directory, owned by this user, and closed to others: the
// socket inside it is the only gate to the user's agents and screen.
func ensurePrivateDir(dir string) error { return socketDir.ensure(dir) }

// ensure creates dir (0700, and its missing parents 0700) when missing,
// then checks it (check).
func (p privateDir) ensure(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
				return fmt.Errorf("create %s %s: %w", p.what, dir, err)
			}
			err = os.Mkdir(dir, 0o700)
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s %s: %w", p.what, dir, err)
		}
	}
	return p.check(dir)
}

// check refuses a directory that is a symlink, foreign-owned, or open to
// group or others, saying what is wrong and how to fix it. It looks twice:
// with lstat, and on the directory opened without following a link, so a
// directory swapped between the two is refused too.
func (p privateDir) check(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("%s %s: %w", p.what, dir, err)
	}
	if err := p.judge(dir, &st); err != nil {
		return err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s %s: open: %w; remove it and start agentd again", p.what, dir, err)
	}
	defer unix.Close(fd)
	var ost unix.Stat_t
	if err := unix.Fstat(fd, &ost); err != nil {
		return fmt.Errorf("%s %s: %w", p.what, dir, err)
	}
	if ost.Dev != st.Dev || ost.Ino != st.Ino {
		return fmt.Errorf("%s %s changed while it was checked; something is replacing it; remove it and start agentd again", p.what, dir)
	}
	return p.judge(dir, &ost)
}

func (p privateDir) judge(dir string, st *unix.Stat_t) error {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("%s %s is a symbolic link, which another user could have planted; remove it (rm %s) and start agentd again", p.what, dir, dir)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s %s is not a directory; remove it or %s", p.what, dir, p.elsewhere)
	case int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s %s is owned by uid %d, not by you (uid %d); remove it or %s", p.what, dir, st.Uid, os.Getuid(), p.elsewhere)
	case st.Mode&0o077 != 0:
		return fmt.Errorf("%s %s has mode %04o, open to other users; run chmod 700 %s", p.what, dir, st.Mode&0o7777, dir)
	}
	return nil
}

// lockFile is the exclusive lock that makes one agentd per user and socket.
type lockFile struct {
	f *os.File
}

// acquireLock takes an exclusive flock on path without waiting. When another
// daemon holds it, the error names that daemon's pid (written in the file).
func acquireLock(path string) (*lockFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(b))
			if _, perr := strconv.Atoi(pid); perr != nil {
				pid = "unknown"
			}
			return nil, fmt.Errorf("%w (pid %s) with lock %s; stop it first (kill %s, or systemctl --user stop agentd)", ErrAlreadyRunning, pid, path, pid)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &lockFile{f: f}, nil
}

func (l *lockFile) release() {
	if l != nil && l.f != nil {
		l.f.Truncate(0)
		l.f.Close() // closing drops the flock
	}
}

// listenOwned creates the socket at path. The caller holds the lock, so a
// socket file already there is a stale one left by a killed daemon and is
// replaced. The socket is created 0600 (umask) and verified after.
func listenOwned(path string) (*net.UnixListener, error) {
	if len(path) > limits.MaxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes, over the %d a Unix socket allows; choose a shorter path with --socket or AGENTD_SOCKET", path, len(path), limits.MaxSocketPath)
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return nil, fmt.Errorf("%s exists and is not a socket; move it away or choose another path with --socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	}
	old := unix.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// We unlink it ourselves, only while holding the lock.
	l.SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("chmod socket %s: %w", path, err)
	}
	return l, nil
}
