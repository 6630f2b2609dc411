package daemon

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

// listenFDsStart is the first file descriptor systemd passes (SD_LISTEN_FDS_START).
const listenFDsStart = 3

// activationListener returns the listener systemd passed by socket
// activation, or nil when the daemon was not socket-activated. The
// environment variables are cleared so session programs do not inherit them.
func activationListener() (net.Listener, error) {
	pid, fds := os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS")
	if fds == "" {
		return nil, nil
	}
	defer func() {
		os.Unsetenv("LISTEN_PID")
		os.Unsetenv("LISTEN_FDS")
		os.Unsetenv("LISTEN_FDNAMES")
	}()
	if pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return nil, nil // meant for another process
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("LISTEN_FDS=%q is not a positive count of sockets", fds)
	}
	if n > 1 {
		return nil, fmt.Errorf("systemd passed %d sockets; agentd.socket should declare exactly one ListenStream", n)
	}
	f := os.NewFile(listenFDsStart, "systemd-socket")
	l, err := net.FileListener(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("use the socket systemd passed: %w", err)
	}
	if _, ok := l.(*net.UnixListener); !ok {
		l.Close()
		return nil, fmt.Errorf("systemd passed a %s socket; agentd serves only a Unix socket", l.Addr().Network())
	}
	return l, nil
}

// notifier sends sd_notify messages when NOTIFY_SOCKET is set, and does
// nothing otherwise.
type notifier struct {
	addr *net.UnixAddr
}

func newNotifier() *notifier {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return &notifier{}
	}
	if path[0] == '@' {
		path = "\x00" + path[1:] // abstract namespace
	}
	return &notifier{addr: &net.UnixAddr{Name: path, Net: "unixgram"}}
}

// notify sends one state string such as "READY=1". Failures are returned for
// the log; systemd being gone must not stop the daemon.
func (n *notifier) notify(state string) error {
	if n.addr == nil {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}

// watchdogInterval returns half of WATCHDOG_USEC when the watchdog is
// enabled for this process, else 0.
func watchdogInterval() time.Duration {
	usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || usec <= 0 {
		return 0
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0
	}
	return time.Duration(usec) * time.Microsecond / 2
}
