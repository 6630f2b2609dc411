package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The session files are held to the socket directory's rules: sessions/,
// the runtime directory and every session directory are created 0700 and
// must be real directories (not links), owned by the user, closed to
// others; files are created 0600 and opened without following a link, so
// a link planted where a log or manifest belongs is never written or read
// through. pkg/daemon checks the state directory above them the same way.

// ensureOwnDir creates dir 0700 when missing and checks it (checkOwnDir).
func ensureOwnDir(what, dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s %s: %w", what, dir, err)
	}
	return checkOwnDir(what, dir)
}

// checkOwnDir refuses a directory that is a link, not a directory, owned by
// another user or open to others, naming the fix; it looks with lstat and
// again on the directory opened without following a link.
func checkOwnDir(what, dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if err := judgeOwnDir(what, dir, &st); err != nil {
		return err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s %s: open: %w; remove it and start agentd again", what, dir, err)
	}
	defer unix.Close(fd)
	var ost unix.Stat_t
	if err := unix.Fstat(fd, &ost); err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if ost.Dev != st.Dev || ost.Ino != st.Ino {
		return fmt.Errorf("%s %s changed while it was checked; remove it and start agentd again", what, dir)
	}
	return judgeOwnDir(what, dir, &ost)
}

func judgeOwnDir(what, dir string, st *unix.Stat_t) error {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("%s %s is a symbolic link, which another user could have planted; remove it (rm %s) and start agentd again", what, dir, dir)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s %s is not a directory; remove it and start agentd again", what, dir)
	case int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s %s is owned by uid %d, not by you (uid %d); remove it and start agentd again", what, dir, st.Uid, os.Getuid())
	case st.Mode&0o077 != 0:
		return fmt.Errorf("%s %s has mode %04o, open to other users; run chmod 700 %s", what, dir, st.Mode&0o7777, dir)
	}
	return nil
}

// openNoFollow opens a session file without following a link (ELOOP when
// path is one), creating it 0600 with O_CREATE.
func openNoFollow(path string, flag int) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
}
