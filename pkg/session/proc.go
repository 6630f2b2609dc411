package session

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// procStat is what agentd reads of /proc/<pid>/stat.
type procStat struct {
	pid, ppid, pgrp, sid int
	state                byte
	start                uint64 // start time, clock ticks since boot
}

// readProcStat parses /proc/<pid>/stat; ok is false when the process is gone.
func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseProcStat(pid, b)
}

func parseProcStat(pid int, b []byte) (procStat, bool) {
	// The command name is in parentheses and may hold anything; fields
	// resume after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+2:])
	// f[0] is field 3 (state); start time is field 22, f[19].
	if len(f) < 20 {
		return procStat{}, false
	}
	st := procStat{pid: pid, state: f[0][0]}
	st.ppid, _ = strconv.Atoi(string(f[1]))
	st.pgrp, _ = strconv.Atoi(string(f[2]))
	st.sid, _ = strconv.Atoi(string(f[3]))
	st.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	return st, true
}

// allProcs returns the stat of every process now visible in /proc.
func allProcs() []procStat {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]procStat, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if st, ok := readProcStat(pid); ok {
			out = append(out, st)
		}
	}
	return out
}

// processAlive reports whether pid is a live (not zombie) process started at
// start (0 skips the check).
func processAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	st, ok := readProcStat(pid)
	if !ok || st.state == 'Z' || st.state == 'X' {
		return false
	}
	return start == 0 || st.start == start
}

// sessionMembers returns the live processes whose session id is sid, or
// that descend from root (when root > 0), excluding exclude.
func sessionMembers(sid, root, exclude int) []int {
	procs := allProcs()
	children := map[int][]int{}
	zombie := map[int]bool{}
	for _, p := range procs {
		if p.state == 'Z' || p.state == 'X' {
			zombie[p.pid] = true
		}
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	set := map[int]bool{}
	for _, p := range procs {
		if sid > 0 && p.sid == sid && p.state != 'Z' {
			set[p.pid] = true
		}
	}
	if root > 0 {
		stack := append([]int(nil), children[root]...)
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !set[p] {
				set[p] = true
			}
			stack = append(stack, children[p]...)
		}
	}
	delete(set, exclude)
	delete(set, os.Getpid())
	out := make([]int, 0, len(set))
	for p := range set {
		if !zombie[p] {
			out = append(out, p)
		}
	}
	return out
}

// signalAll sends sig to the process group pgid (when > 0) and to every pid.
func signalAll(pgid int, pids []int, sig syscall.Signal) {
	if pgid > 0 {
		syscall.Kill(-pgid, sig)
	}
	for _, p := range pids {
		syscall.Kill(p, sig)
	}
}

// workerDirEnv is set in every worker's environment to its session
// directory. /proc/<pid>/environ is readable by the same user only, and it
// is what a worker was started with, so it identifies the worker of a
// session even when its socket and manifest are gone. The directory, not
// the name, is used because several agentd (tests, other state
// directories) may run sessions of one name at once.
const workerDirEnv = "AGENTD_WORKER_SESSION_DIR"

// workersOf returns the live processes (not zombies) whose environment says
// they are the worker of the session directory dir.
func workersOf(dir string) []procStat {
	want := []byte(workerDirEnv + "=" + filepath.Clean(dir) + "\x00")
	var out []procStat
	for _, p := range allProcs() {
		if p.state == 'Z' || p.state == 'X' || p.pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/environ")
		if err != nil {
			continue
		}
		if bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...)) {
			out = append(out, p)
		}
	}
	return out
}
