package desktop

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procStart returns a process's start time (field 22 of /proc/PID/stat) and
// its process group, or ok false when it is gone.
func procStart(pid int) (start uint64, pgrp int, ok bool) {
	if pid <= 0 {
		return 0, 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 20 || f[0][0] == 'Z' {
		return 0, 0, false
	}
	pgrp, _ = strconv.Atoi(string(f[2]))
	start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	return start, pgrp, true
}

// member is a recorded process: pid and start time, so a reused pid is
// never taken for it.
type member struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func memberOf(pid int) member {
	st, _, _ := procStart(pid)
	return member{PID: pid, Start: st}
}

// alive reports whether the recorded process still runs, in group pgid
// when pgid is positive.
func (m member) alive(pgid int) bool {
	st, pg, ok := procStart(m.PID)
	return ok && st == m.Start && (pgid <= 0 || pg == pgid)
}

// groupGone reports whether no process is left in group pgid.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// endGroup ends process group pgid: SIGTERM, then SIGKILL when it is still
// there after grace. It signals only while one of members is alive in the
// group, so a group id reused by strangers is never hit. It returns once
// the group is gone or a second past the KILL.
func endGroup(pgid int, members []member, grace time.Duration) {
	ours := func() bool {
		for _, m := range members {
			if m.PID > 0 && m.alive(pgid) {
				return true
			}
		}
		return false
	}
	if pgid <= 0 || !ours() {
		return
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	if waitGone(pgid, grace) {
		return
	}
	if ours() {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	waitGone(pgid, time.Second)
}

// waitGone polls for the group to empty: there is no event for the end of
// a process that is not our child, and a pidfd covers one process, not a
// group. 5 ms steps keep rm quick.
func waitGone(pgid int, d time.Duration) bool {
	end := time.Now().Add(d)
	for {
		if groupGone(pgid) {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killWait bounds the wait for a process to end after SIGKILL. The kernel
// ends it at once unless it sleeps uninterruptibly (a page fault under
// memory pressure, a hung mount); past this the process is reported alive.
const killWait = 5 * time.Second

// endMembers ends the recorded members still alive, in any group (one
// that left the desktop's group is not reached by endGroup): SIGTERM,
// SIGKILL after grace, then up to killWait for them to end. Each signal
// goes through a pidfd opened while the pid still names the recorded
// process (its start time matches), so a reused pid is never hit. It
// returns the members still alive at the end: none, unless one would not
// die.
func endMembers(members []member, grace time.Duration) []member {
	type proc struct {
		m  member
		fd int // a pidfd, or -1 (kernel without pidfds: signal by pid)
	}
	var ps []proc
	for _, m := range members {
		if m.PID <= 0 {
			continue
		}
		fd, err := unix.PidfdOpen(m.PID, 0)
		if err != nil {
			fd = -1
		}
		if !m.alive(0) { // checked after the open: the pidfd is the recorded process's
			if fd >= 0 {
				unix.Close(fd)
			}
			continue
		}
		ps = append(ps, proc{m, fd})
	}
	defer func() {
		for _, p := range ps {
			if p.fd >= 0 {
				unix.Close(p.fd)
			}
		}
	}()
	signal := func(sig syscall.Signal) {
		for _, p := range ps {
			if p.fd >= 0 {
				unix.PidfdSendSignal(p.fd, sig, nil, 0)
			} else if p.m.alive(0) {
				syscall.Kill(p.m.PID, sig)
			}
		}
	}
	left := func() []member {
		var out []member
		for _, p := range ps {
			if p.m.alive(0) {
				out = append(out, p.m)
			}
		}
		return out
	}
	wait := func(d time.Duration) bool {
		end := time.Now().Add(d)
		for len(left()) > 0 {
			if time.Now().After(end) {
				return false
			}
			time.Sleep(5 * time.Millisecond)
		}
		return true
	}
	if len(ps) == 0 {
		return nil
	}
	signal(syscall.SIGTERM)
	if wait(grace) {
		return nil
	}
	signal(syscall.SIGKILL)
	wait(killWait)
	return left()
}
