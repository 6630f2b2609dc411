package test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// userManager is a real systemd user manager (`systemd --user`) of a test's
// own, for the tests of sessions as units. This machine (and CI, which runs
// on one of its kind) has no systemd as PID 1, and a user manager started
// plainly would take the whole machine's cgroup tree for its own (it moves
// every process it finds in its root into init.scope). So it runs confined:
// in a cgroup of the test's own (created under the test's cgroup in every
// hierarchy it uses), in a cgroup namespace rooted there and a mount
// namespace where /sys/fs/cgroup shows only that subtree and
// /run/systemd/system exists (the mark systemd looks for before it runs as
// a user instance). Its runtime directory, config (where the test installs
// agentd's units) and state are the home's. It needs root (CAP_SYS_ADMIN)
// and a writable cgroup tree; startUserManager skips the test, saying why,
// where either is missing.
type userManager struct {
	t      testing.TB
	h      *home
	cmd    *exec.Cmd
	done   chan struct{}
	log    *syncBuffer
	cgroup map[string]string // hierarchy mount dir → the test's cgroup in it (host view)
}

// hierarchies are the cgroup hierarchies the manager gets, by mount
// directory under /sys/fs/cgroup, with how to mount them again inside its
// namespace. On a unified-only machine only "" (cgroup2 at the top).
type hierarchy struct{ dir, fstype, opts string }

func cgroupLayout() ([]hierarchy, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return nil, err
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return []hierarchy{{"", "cgroup2", ""}}, nil
	}
	var out []hierarchy
	for _, h := range []hierarchy{{"systemd", "cgroup", "none,name=systemd"}, {"unified", "cgroup2", ""},
		{"memory", "cgroup", "memory"}, {"cpu", "cgroup", "cpu"}, {"cpuacct", "cgroup", "cpuacct"}, {"pids", "cgroup", "pids"}} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", h.dir, "cgroup.procs")); err == nil {
			out = append(out, h)
		}
	}
	if len(out) == 0 || out[0].dir != "systemd" {
		return nil, fmt.Errorf("no name=systemd hierarchy at /sys/fs/cgroup/systemd")
	}
	return out, nil
}

// selfCgroup is this process's cgroup in the hierarchy mounted at dir.
func selfCgroup(dir string) (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	want := map[string]string{"": "", "systemd": "name=systemd", "unified": "", "memory": "memory", "cpu": "cpu", "cpuacct": "cpuacct", "pids": "pids"}[dir]
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if want == "" && parts[0] == "0" || want != "" && slicesContains(strings.Split(parts[1], ","), want) {
			return parts[2], nil
		}
	}
	return "", fmt.Errorf("no line for %q in /proc/self/cgroup", dir)
}

func slicesContains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// startUserManager starts the home's user manager and waits until it runs.
func startUserManager(t testing.TB, h *home) *userManager {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a confined user manager needs root (cgroup and mount namespaces, cgroups of its own)")
	}
	systemd := "/usr/lib/systemd/systemd"
	if _, err := os.Stat(systemd); err != nil {
		t.Skip("systemd is not installed (Debian package systemd)")
	}
	for _, tool := range []string{"unshare", "nsenter", "mount", "systemctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	layout, err := cgroupLayout()
	if err != nil {
		t.Skipf("no cgroup tree to confine a user manager in: %v", err)
	}
	var tag [4]byte
	rand.Read(tag[:])
	name := "agentd-test-um-" + hex.EncodeToString(tag[:])
	um := &userManager{t: t, h: h, done: make(chan struct{}), log: &syncBuffer{}, cgroup: map[string]string{}}
	t.Cleanup(um.stop)
	var moves, mounts strings.Builder
	mounts.WriteString("mount -t tmpfs -o mode=0755 tmpfs /sys/fs/cgroup\n")
	for _, hy := range layout {
		self, err := selfCgroup(hy.dir)
		if err != nil {
			t.Skipf("cgroup %s: %v", hy.dir, err)
		}
		dir := filepath.Join("/sys/fs/cgroup", hy.dir, self, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Skipf("cannot make a cgroup for the user manager (%v); the cgroup tree is not writable here", err)
		}
		um.cgroup[hy.dir] = dir
		fmt.Fprintf(&moves, "echo $$ > %s/cgroup.procs\n", dir)
		if hy.dir == "" {
			mounts.Reset() // unified only: mount cgroup2 at the top
			mounts.WriteString("mount -t cgroup2 cgroup2 /sys/fs/cgroup\n")
			continue
		}
		opts := ""
		if hy.opts != "" {
			opts = "-o " + hy.opts
		}
		fmt.Fprintf(&mounts, "mkdir -p /sys/fs/cgroup/%s && mount -t %s %s %s /sys/fs/cgroup/%s\n", hy.dir, hy.fstype, opts, hy.fstype, hy.dir)
	}
	inner := mounts.String() +
		"mount -t tmpfs -o mode=0755 tmpfs /run/systemd 2>/dev/null || { mkdir -p /run/systemd && mount -t tmpfs -o mode=0755 tmpfs /run/systemd; }\n" +
		"mkdir -p /run/systemd/system\n" +
		"exec " + systemd + " --user\n"
	script := "set -e\n" + moves.String() + "exec unshare --cgroup --mount --propagation private /bin/sh -ec '" + inner + "'\n"
	um.cmd = exec.Command("/bin/sh", "-c", script)
	um.cmd.Env = h.env("HOME="+filepath.Dir(h.config), "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(h.runtime, "bus"))
	um.cmd.Stdout, um.cmd.Stderr = um.log, um.log
	// A test that dies takes its manager with it (TestMain kills the
	// agentd processes it leaves).
	um.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := um.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { um.cmd.Wait(); close(um.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := um.systemctl("is-system-running")
		state := strings.TrimSpace(out)
		if err == nil || state == "degraded" {
			break
		}
		select {
		case <-um.done:
			t.Skipf("the user manager did not start here: %v\n%s", um.cmd.ProcessState, um.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the user manager is not running after 20s (is-system-running: %q)\n%s", state, um.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return um
}

// systemctl runs systemctl --user against the home's manager, in its mount
// namespace: systemctl believes there is no systemd without
// /run/systemd/system, which only the manager's namespace has.
func (um *userManager) systemctl(args ...string) (string, error) {
	return um.run("systemctl", append([]string{"--user"}, args...)...)
}

// run runs a systemd tool (systemctl, systemd-run) against the home's
// manager, in its mount namespace.
func (um *userManager) run(tool string, args ...string) (string, error) {
	cmd := exec.Command("nsenter", append([]string{"-t", fmt.Sprint(um.cmd.Process.Pid), "-m", tool}, args...)...)
	cmd.Env = um.h.env("DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(um.h.runtime, "bus"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// installAgentd installs the shipped units, pointed at the test's
// binaries, with dropins (file name → text) beside them, and reloads.
func (um *userManager) installAgentd(dropins map[string]string) {
	um.t.Helper()
	dir := filepath.Join(um.h.config, "systemd", "user")
	if err := os.MkdirAll(filepath.Join(dir, "agentd.service.d"), 0o755); err != nil {
		um.t.Fatal(err)
	}
	service, err := os.ReadFile("../systemd/agentd.service")
	if err != nil {
		um.t.Fatal(err)
	}
	socket, err := os.ReadFile("../systemd/agentd.socket")
	if err != nil {
		um.t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agentd.service"), bytes.ReplaceAll(service, []byte("@BINDIR@"), []byte(bin.dir)), 0o644)
	os.WriteFile(filepath.Join(dir, "agentd.socket"), socket, 0o644)
	for name, text := range dropins {
		os.WriteFile(filepath.Join(dir, "agentd.service.d", name), []byte(text), 0o644)
	}
	if out, err := um.systemctl("daemon-reload"); err != nil {
		um.t.Fatalf("daemon-reload: %v\n%s", err, out)
	}
}

// stop ends the manager (which stops its units) and removes its cgroups,
// killing whatever is still in them.
func (um *userManager) stop() {
	if um.cmd != nil && um.cmd.Process != nil {
		select {
		case <-um.done:
		default:
			um.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-um.done:
			case <-time.After(15 * time.Second):
				um.t.Errorf("the user manager did not exit within 15s of SIGTERM\n%s", um.log)
				um.cmd.Process.Kill()
				<-um.done
			}
		}
	}
	if um.t.Failed() {
		um.t.Logf("user manager's log:\n%s", um.log)
	}
	for dir, cg := range um.cgroup {
		if left := killCgroup(cg); left > 0 && dir == "systemd" {
			um.t.Errorf("%d processes were left in the user manager's cgroup after it stopped", left)
		}
	}
	for _, cg := range um.cgroup {
		removeCgroup(cg)
	}
}

// killCgroup kills every process in the cgroup tree at dir, returning how
// many there were, and waits (bounded) for them to go.
func killCgroup(dir string) int {
	n := 0
	for range 50 {
		pids := cgroupProcs(dir)
		if len(pids) == 0 {
			return n
		}
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		n = max(n, len(pids))
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

func cgroupProcs(dir string) []int {
	var pids []int
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "cgroup.procs" {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var pid int
			if _, err := fmt.Sscan(sc.Text(), &pid); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// removeCgroup removes the cgroup tree at dir, children first.
func removeCgroup(dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i])
	}
}
