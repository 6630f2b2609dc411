package wire

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// SocketEnv names the environment variable that overrides the socket path,
// for the daemon and its clients alike. Session programs get it too.
const SocketEnv = "AGENTD_SOCKET"

// DefaultSocketPath is where agentd listens and clients connect unless told
// otherwise: $AGENTD_SOCKET, else $XDG_RUNTIME_DIR/agentd/agentd.sock, else
// a private directory under the system's temporary directory named for the
// user, which the daemon creates 0700 and verifies before use.
func DefaultSocketPath() string {
	if p := os.Getenv(SocketEnv); p != "" {
		return p
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		return filepath.Join(rt, "agentd", "agentd.sock")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("agentd-%d", os.Getuid()), "agentd.sock")
}

// UntrustedSocketError is a socket the client will not talk to: its
// directory is not one the user's agentd could have made (a symbolic
// link, another user's, open to others), or the process serving it is
// another user's. Nothing was sent to it. Found says what was found, Fix
// what to do. It arrives inside an *UnreachableError (agentctl exits
// ExitUnreachable, 69: the user's agentd is not reachable there).
type UntrustedSocketError struct {
	Socket string
	Found  string
	Fix    string
}

func (e *UntrustedSocketError) Error() string {
	return fmt.Sprintf("refusing to talk to %s: %s; %s", e.Socket, e.Found, e.Fix)
}

// CheckSocketDir verifies, before anything is sent, that the directory of
// the socket at path is the user's own, mode 0700 (nothing for group or
// others) and not a symbolic link: what agentd itself demands of it. It
// matters most for the fallback under the temporary directory (no
// XDG_RUNTIME_DIR: ssh without pam_systemd, cron, su, containers), where
// another user may have made /tmp/agentd-$UID first and listens in it. A
// directory or socket that does not exist is no refusal (the dial then
// finds no socket, and says how to start agentd). One lstat, two when
// refusing.
func CheckSocketDir(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil
	}
	fix := fmt.Sprintf("or point %s (or XDG_RUNTIME_DIR) at a directory of your own, 0700", SocketEnv)
	if os.Getenv(SocketEnv) == "" && os.Getenv("XDG_RUNTIME_DIR") == "" {
		fix = fmt.Sprintf("or, since XDG_RUNTIME_DIR is unset and this is the fallback under %s, set XDG_RUNTIME_DIR to a directory of your own (/run/user/%d under systemd)",
			os.TempDir(), os.Getuid())
	}
	var found string
	switch st, _ := fi.Sys().(*syscall.Stat_t); {
	case fi.Mode()&os.ModeSymlink != 0:
		to, _ := os.Readlink(dir)
		found = fmt.Sprintf("its directory %s is a symbolic link (to %s)", dir, to)
		fix = fmt.Sprintf("remove the link and start agentd, which makes the directory 0700 and yours, %s", fix)
	case !fi.IsDir():
		found = fmt.Sprintf("%s is not a directory", dir)
		fix = fmt.Sprintf("remove it and start agentd, %s", fix)
	case st != nil && int(st.Uid) != os.Getuid():
		found = fmt.Sprintf("its directory %s belongs to uid %d, not to you (uid %d)", dir, st.Uid, os.Getuid())
		fix = fmt.Sprintf("someone else made it, perhaps to read what you send: do not use it, tell your administrator, %s", fix)
	case fi.Mode().Perm()&0o077 != 0:
		found = fmt.Sprintf("its directory %s is open to others (mode %04o, want 0700)", dir, fi.Mode().Perm())
		fix = fmt.Sprintf("chmod 700 %s and restart agentd (the socket may have been replaced meanwhile), %s", dir, fix)
	default:
		return nil
	}
	if _, err := os.Lstat(path); err != nil {
		return nil
	}
	return &UntrustedSocketError{Socket: path, Found: found, Fix: fix}
}
