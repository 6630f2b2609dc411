package session

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair sized cols x rows. The master stays
// non-blocking (its ioctls go through SyscallConn, never Fd), so reads and
// writes honour deadlines and Close interrupts them.
func openPTY(cols, rows int) (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	defer func() {
		if err != nil {
			master.Close()
		}
	}()
	var n int
	if err = ptyControl(master, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return err
		}
		var e error
		n, e = unix.IoctlGetInt(fd, unix.TIOCGPTN)
		return e
	}); err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	if err = setWinsize(master, cols, rows); err != nil {
		return nil, nil, err
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	return master, slave, nil
}

func ptyControl(f *os.File, fn func(fd int) error) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := sc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// setWinsize sets the terminal size; the kernel sends SIGWINCH to the
// foreground process group.
func setWinsize(master *os.File, cols, rows int) error {
	err := ptyControl(master, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	})
	if err != nil {
		return fmt.Errorf("set terminal size: %w", err)
	}
	return nil
}
