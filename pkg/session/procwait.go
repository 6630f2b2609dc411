package session

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// waitGone waits until the process pid, started at start (0 skips the
// check), has ended (exited, even if not yet reaped), or d passes, or ctx
// ends; it reports whether the process is gone, and ctx's error if ctx
// ended first. The kernel says when the process ends (a pidfd becomes
// readable, pidfd_open(2), Linux 5.3); where pidfds are not available it
// falls back to looking at /proc every pollProcEvery, which is a guess
// that can be late by that much.
func waitGone(ctx context.Context, pid int, start uint64, d time.Duration) (bool, error) {
	if !processAlive(pid, start) {
		return true, nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return true, nil
	case err != nil:
		return pollGone(ctx, pid, start, d)
	}
	defer unix.Close(fd)
	// The pidfd names whichever process has pid now: if that is not the
	// one started at start, ours is gone.
	if !processAlive(pid, start) {
		return true, nil
	}
	// A pipe wakes the poll when ctx ends.
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return pollGone(ctx, pid, start, d)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	stop := context.AfterFunc(ctx, func() { unix.Write(p[1], []byte{0}) })
	defer stop()
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(p[0]), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return pollGone(ctx, pid, start, time.Until(deadline))
		case n == 0:
			continue // the deadline, checked above
		case fds[0].Revents != 0:
			return true, nil
		case fds[1].Revents != 0:
			return !processAlive(pid, start), ctx.Err()
		}
	}
}

// pollProcEvery is how often pollGone looks at /proc.
const pollProcEvery = 5 * time.Millisecond

// pollGone is waitGone by looking at /proc, for where pidfds are not
// available.
func pollGone(ctx context.Context, pid int, start uint64, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	t := time.NewTicker(pollProcEvery)
	defer t.Stop()
	for processAlive(pid, start) {
		if !time.Now().Before(deadline) {
			return false, nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return !processAlive(pid, start), ctx.Err()
		}
	}
	return true, nil
}
