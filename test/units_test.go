package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/pkg/wire"
)

// formerHardening is the sandbox agentd.service used to hold. A session
// forked by a daemon under it inherits it all; one started as a unit of
// its own escapes it. KillMode=control-group (the default, where the
// shipped unit says process for the daemon's other children) shows that
// sessions outlive the daemon's unit without KillMode=process.
const formerHardening = `[Service]
KillMode=control-group
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
RestrictNamespaces=yes
SystemCallArchitectures=native
ProtectClock=yes
ProtectHostname=yes
RestrictAddressFamilies=AF_UNIX
`

// (The former unit's ProtectKernelTunables, ProtectKernelModules and
// ProtectControlGroups are left out above: they need a mount namespace the
// confined test manager cannot set up (226/NAMESPACE), and they take none
// of the three rights checked.)

// rightsProbe writes a script that checks, from inside a session, the
// three rights a program started from a terminal has and the former
// sandbox took: an AF_INET socket opens, `unshare -U true` succeeds, and a
// setuid binary runs with its owner's uid (a copy of id(1) owned by
// nobody, so the effective uid it prints says whether setuid took
// effect: 65534 if so, 0 under no_new_privs). It returns the script.
func rightsProbe(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"python3", "unshare", "id"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	id, _ := exec.LookPath("id")
	b, err := os.ReadFile(id)
	if err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(dir, "suid-id")
	if err := os.WriteFile(suid, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(suid, 65534, 65534); err != nil {
		t.Skipf("cannot give a test binary to nobody: %v", err)
	}
	if err := os.Chmod(suid, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	// The probe itself, outside any sandbox: if setuid does not take here
	// (a nosuid mount), the test could not tell.
	if out, err := exec.Command(suid, "-u").Output(); err != nil || strings.TrimSpace(string(out)) != "65534" {
		t.Skipf("a setuid binary does not take effect in %s here (%q, %v)", dir, out, err)
	}
	script := filepath.Join(dir, "probe.sh")
	text := `#!/bin/sh
out=$1
{
python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()' 2>/dev/null && echo inet=ok || echo inet=refused
unshare -U true 2>/dev/null && echo userns=ok || echo userns=refused
echo euid=$(` + suid + ` -u)
} > "$out.tmp"
mv "$out.tmp" "$out"
exec sleep 600
`
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// probeSession spawns a session running the probe and returns what it
// found.
func probeSession(t *testing.T, h *home, name, script string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name+".out")
	if o, e, code := h.agentctl("", "spawn", name, "--", "/bin/sh", script, out); code != 0 {
		t.Fatalf("spawn %s: exit %d %s%s", name, code, o, e)
	}
	var got []byte
	await(t, 10*time.Second, "the probe's findings in session "+name, func() bool {
		var err error
		got, err = os.ReadFile(out)
		return err == nil
	})
	return strings.TrimSpace(string(got))
}

func sessionStatusOf(t *testing.T, h *home, name string) wire.SessionStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, h.socket, wire.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Status(ctx, name)
	if err != nil {
		t.Fatalf("status %s: %v", name, err)
	}
	return *s
}

// procStatus is a field of /proc/PID/status.
func procStatus(pid int, field string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func mainPID(t *testing.T, um *userManager, unit string) int {
	t.Helper()
	out, err := um.systemctl("show", "-p", "MainPID", "--value", unit)
	pid, _ := strconv.Atoi(strings.TrimSpace(out))
	if err != nil || pid <= 0 {
		t.Fatalf("%s has no main process: %v %q", unit, err, out)
	}
	return pid
}

// TestSessionsEscapeTheDaemonsSandbox runs the shipped agentd.service under
// a real user manager with the sandbox it used to hold added back (a
// drop-in), and checks from inside a session that its program has the
// network, user namespaces and setuid: the session is a unit of its own,
// started fresh by the manager. The same daemon told to fork its workers
// (session_launcher fork) gives a session none of the three, which shows
// the sandbox is real here. The unit session outlives the daemon's unit,
// and the daemon started again re-attaches to it.
func TestSessionsEscapeTheDaemonsSandbox(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	script := rightsProbe(t)
	um := startUserManager(t, h)
	um.installAgentd(map[string]string{"harden.conf": formerHardening})
	if out, err := um.systemctl("start", "agentd.socket", "agentd.service"); err != nil {
		st, _ := um.systemctl("status", "--no-pager", "-l", "agentd.service")
		t.Fatalf("start agentd: %v\n%s\n%s", err, out, st)
	}
	await(t, 10*time.Second, "agentd serving", func() bool { return h.hello() == nil })
	daemon := mainPID(t, um, "agentd.service")
	if s, n := procStatus(daemon, "Seccomp"), procStatus(daemon, "NoNewPrivs"); s != "2" || n != "1" {
		t.Fatalf("agentd runs with Seccomp %q and NoNewPrivs %q, want 2 and 1: the sandbox is not applied", s, n)
	}

	got := probeSession(t, h, "esc", script)
	if want := "inet=ok\nuserns=ok\neuid=65534"; got != want {
		t.Errorf("inside a session of the sandboxed daemon:\n%s\nwant\n%s", got, want)
	}
	st := sessionStatusOf(t, h, "esc")
	if st.Launcher != "systemd" || st.Unit != "agentd-session-esc.service" {
		t.Errorf("status says launcher %q, unit %q; want systemd, agentd-session-esc.service", st.Launcher, st.Unit)
	}
	if s := procStatus(st.ProgramPID, "Seccomp"); s != "0" {
		t.Errorf("the session's program has Seccomp %q, want 0", s)
	}
	if out, _ := um.systemctl("status", "--no-pager", "agentd-session-esc.service"); !strings.Contains(out, fmt.Sprint(st.ProgramPID)) {
		t.Errorf("systemctl --user status agentd-session-esc.service does not show the program (pid %d):\n%s", st.ProgramPID, out)
	}

	// The daemon's unit stops, killing its whole cgroup: the session runs on.
	if out, err := um.systemctl("stop", "agentd.service"); err != nil {
		t.Fatalf("stop agentd: %v\n%s", err, out)
	}
	if out, _ := um.systemctl("is-active", "agentd-session-esc.service"); strings.TrimSpace(out) != "active" {
		t.Fatalf("with agentd.service stopped the session's unit is %q, want active", strings.TrimSpace(out))
	}

	// The same daemon, forking: its session inherits the sandbox.
	um.installAgentd(map[string]string{"harden.conf": formerHardening,
		"fork.conf": "[Service]\nExecStart=\nExecStart=" + bin.agentd + " --log-format json --session-launcher fork\n"})
	if out, err := um.systemctl("start", "agentd.service"); err != nil {
		t.Fatalf("start agentd: %v\n%s", err, out)
	}
	await(t, 10*time.Second, "agentd serving again", func() bool { return h.hello() == nil })
	// The new daemon re-attaches to the session started as a unit.
	if st := sessionStatusOf(t, h, "esc"); st.Status != wire.StatusRunning || st.Launcher != "systemd" {
		t.Errorf("after the daemon's restart the unit session is %s (launcher %q), want running, systemd", st.Status, st.Launcher)
	}
	got = probeSession(t, h, "forked", script)
	if want := "inet=refused\nuserns=refused\neuid=0"; got != want {
		t.Errorf("inside a forked session of the sandboxed daemon:\n%s\nwant\n%s (the sandbox inherited)", got, want)
	}
	if st := sessionStatusOf(t, h, "forked"); st.Launcher != "fork" || st.Unit != "" {
		t.Errorf("status of the forked session says launcher %q, unit %q; want fork and none", st.Launcher, st.Unit)
	}
	for _, name := range []string{"esc", "forked"} {
		h.agentctl("", "stop", name)
	}
}

// cgroupFile reads a file of the cgroup pid is in, for the v1 controller
// ctl ("" for the unified hierarchy), as the kernel holds it: the limit in
// force, not what systemd says it asked for.
func cgroupFile(t *testing.T, pid int, ctl, file string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir string
		switch {
		case ctl == "" && parts[0] == "0":
			dir = "/sys/fs/cgroup/unified"
			if _, err := os.Stat(dir); err != nil {
				dir = "/sys/fs/cgroup"
			}
		case ctl != "" && slicesContains(strings.Split(parts[1], ","), ctl):
			dir = "/sys/fs/cgroup/" + ctl
		default:
			continue
		}
		v, err := os.ReadFile(filepath.Join(dir, parts[2], file))
		if err != nil {
			t.Fatalf("read the session's %s: %v", file, err)
		}
		return strings.TrimSpace(string(v))
	}
	t.Fatalf("pid %d has no %q cgroup", pid, ctl)
	return ""
}

// limitsOf reads the memory limit and CPU share in force on pid's cgroup:
// memory.max and cpu.weight on the unified hierarchy, else the v1
// memory.limit_in_bytes and cpu.shares (systemd writes CPUWeight w as
// shares w*1024/100).
func limitsOf(t *testing.T, pid int) (memory, cpu string) {
	t.Helper()
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return cgroupFile(t, pid, "", "memory.max"), cgroupFile(t, pid, "", "cpu.weight")
	}
	return cgroupFile(t, pid, "memory", "memory.limit_in_bytes"), cgroupFile(t, pid, "cpu", "cpu.shares")
}

// TestSessionLimitsReachItsCgroup: spawn --memory-max and --cpu-weight, and
// the config's defaults, become the limits the kernel holds on the
// session's own cgroup; a reload (systemctl --user reload agentd, which
// sends SIGHUP) changes the defaults for the next spawn.
func TestSessionLimitsReachItsCgroup(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	um := startUserManager(t, h)
	v2 := false
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		v2 = true
	}
	// The limits need the memory and cpu controllers in the manager's
	// cgroup tree.
	if v2 {
		ctl, _ := os.ReadFile(filepath.Join(um.cgroup[""], "cgroup.controllers"))
		if f := strings.Fields(string(ctl)); !slicesContains(f, "memory") || !slicesContains(f, "cpu") {
			t.Skipf("the memory and cpu controllers are not delegated to the test's cgroup (it has %q)", strings.TrimSpace(string(ctl)))
		}
	} else if um.cgroup["memory"] == "" || um.cgroup["cpu"] == "" {
		t.Skip("no v1 memory or cpu hierarchy to hold a session's limits")
	}
	cpu := func(weight int) string {
		if v2 {
			return strconv.Itoa(weight)
		}
		return strconv.Itoa(weight * 1024 / 100)
	}
	h.writeConfig("session_memory_max = 33554432\nsession_cpu_weight = 200\n")
	um.installAgentd(nil)
	if out, err := um.systemctl("start", "agentd.socket", "agentd.service"); err != nil {
		t.Fatalf("start agentd: %v\n%s", err, out)
	}
	await(t, 10*time.Second, "agentd serving", func() bool { return h.hello() == nil })

	for _, c := range []struct {
		name      string
		flags     []string
		mem, cpu  string
		unitValue string
	}{
		{"given", []string{"--memory-max", "64M", "--cpu-weight", "50"}, "67108864", cpu(50), "MemoryMax=67108864"},
		{"defaults", nil, "33554432", cpu(200), "MemoryMax=33554432"},
	} {
		args := append(append([]string{"spawn", c.name}, c.flags...), "--", "sleep", "600")
		if o, e, code := h.agentctl("", args...); code != 0 {
			t.Fatalf("spawn %s: exit %d %s%s", c.name, code, o, e)
		}
		s := sessionStatusOf(t, h, c.name)
		mem, share := limitsOf(t, s.WorkerPID)
		if mem != c.mem || share != c.cpu {
			t.Errorf("session %s (%v): its cgroup holds memory %s and cpu %s, want %s and %s", c.name, c.flags, mem, share, c.mem, c.cpu)
		}
		// The program is in the same cgroup as its worker.
		if pm, pc := limitsOf(t, s.ProgramPID); pm != mem || pc != share {
			t.Errorf("session %s: its program's cgroup holds %s/%s, its worker's %s/%s", c.name, pm, pc, mem, share)
		}
		if out, _ := um.systemctl("show", "-p", "MemoryMax", s.Unit); strings.TrimSpace(out) != c.unitValue {
			t.Errorf("systemctl show %s says %q, want %s", s.Unit, strings.TrimSpace(out), c.unitValue)
		}
	}

	// A program that cannot start leaves no unit behind to block its
	// name: the next spawn of the name runs.
	if _, e, code := h.agentctl("", "spawn", "again", "--", "/nonexistent/prog"); code != 14 || !strings.Contains(e, "/nonexistent/prog") {
		t.Errorf("spawn of a missing program as a unit: exit %d %q, want 14 naming it", code, e)
	}
	if _, e, code := h.agentctl("", "spawn", "again", "--", "sleep", "600"); code != 0 {
		t.Errorf("spawn of the name again after a failed spawn: exit %d %s", code, e)
	}

	// A unit of the name already runs (not this agentd's): the spawn is
	// refused, saying whose it may be and how to stop it.
	if out, err := um.run("systemd-run", "--user", "--unit", "agentd-session-taken", "sleep", "600"); err != nil {
		t.Fatalf("systemd-run: %v\n%s", err, out)
	}
	if _, e, code := h.agentctl("", "spawn", "taken", "--", "sleep", "600"); code != 14 || !strings.Contains(e, "systemctl --user stop agentd-session-taken.service") {
		t.Errorf("spawn onto a running unit of the name: exit %d %q, want 14 saying how to stop it", code, e)
	}
	if _, _, code := h.agentctl("", "status", "taken"); code != 13 {
		t.Errorf("the refused spawn left session taken behind (status exit %d, want 13)", code)
	}

	// The manager re-executes itself (an upgrade of systemd): the
	// daemon's connection breaks, and the next spawn dials again.
	if out, err := um.systemctl("daemon-reexec"); err != nil {
		t.Fatalf("daemon-reexec: %v\n%s", err, out)
	}
	await(t, 10*time.Second, "the manager back after its re-exec", func() bool {
		out, _ := um.systemctl("is-system-running")
		return strings.TrimSpace(out) == "running" || strings.TrimSpace(out) == "degraded"
	})
	if _, e, code := h.agentctl("", "spawn", "after-reexec", "--", "sleep", "600"); code != 0 {
		t.Errorf("spawn after the manager's re-exec: exit %d %s", code, e)
	} else if s := sessionStatusOf(t, h, "after-reexec"); s.Unit != "agentd-session-after-reexec.service" {
		t.Errorf("after the manager's re-exec the session runs as unit %q", s.Unit)
	}

	h.writeConfig("session_memory_max = 50331648\nsession_cpu_weight = 200\n")
	if out, err := um.systemctl("reload", "agentd.service"); err != nil {
		t.Fatalf("reload agentd: %v\n%s", err, out)
	}
	// The reload is asynchronous to systemctl (a signal); the next spawns
	// see it once applied.
	n := 0
	await(t, 10*time.Second, "a spawn with the reloaded default", func() bool {
		n++
		name := fmt.Sprintf("reloaded%d", n)
		if _, e, code := h.agentctl("", "spawn", name, "--", "sleep", "600"); code != 0 {
			t.Fatalf("spawn %s: exit %d %s", name, code, e)
		}
		mem, _ := limitsOf(t, sessionStatusOf(t, h, name).WorkerPID)
		return mem == "50331648"
	})
}

// TestForkedSessionsRefuseLimits: without a user manager (this home has
// none) agentd forks its workers, says so in status, and refuses limits it
// cannot apply, naming what they need; bad limits are refused before
// anything starts.
func TestForkedSessionsRefuseLimits(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	// The log reaches the test through a pipe copied by another goroutine,
	// which beside two CPU hogs had not copied the line yet when the
	// socket answered.
	await(t, 10*time.Second, "the log to say sessions are forked by agentd", func() bool {
		return strings.Contains(d.stderr.String(), "sessions are forked by agentd")
	})
	if _, e, code := h.agentctl("", "spawn", "lim", "--memory-max", "1G", "--", "sleep", "60"); code != 2 || !strings.Contains(e, "need a systemd user manager") {
		t.Errorf("spawn --memory-max on a forking agentd: exit %d %q, want 2 saying a user manager is needed", code, e)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--memory-max", "lots"}, "not a size"},
		{[]string{"--memory-max", "-1G"}, "not a size"},
		{[]string{"--cpu-weight", "0"}, "out of range"},
		{[]string{"--cpu-weight", "10001"}, "out of range"},
	} {
		args := append(append([]string{"spawn", "bad"}, c.args...), "--", "true")
		if _, e, code := h.agentctl("", args...); code != 2 || !strings.Contains(e, c.want) {
			t.Errorf("spawn %v: exit %d %q, want 2 saying %q", c.args, code, e, c.want)
		}
	}
	if _, e, code := h.agentctl("", "spawn", "plain", "--", "sleep", "60"); code != 0 {
		t.Fatalf("spawn: exit %d %s", code, e)
	}
	if s := sessionStatusOf(t, h, "plain"); s.Launcher != "fork" || s.Unit != "" {
		t.Errorf("status says launcher %q unit %q, want fork and none", s.Launcher, s.Unit)
	}
	if _, _, code := h.agentctl("", "list"); code != 0 {
		t.Errorf("list after the refused spawns: exit %d", code)
	}
	if _, _, code := h.agentctl("", "status", "bad"); code != 13 {
		t.Errorf("a refused spawn left session bad behind (status exit %d, want 13)", code)
	}
}

// TestSessionLauncherSystemdWithoutAManagerFailsToStart: session_launcher
// systemd (what agentd.service asks for) refuses to start where no user
// manager answers, saying what to do, rather than fork sessions.
func TestSessionLauncherSystemdWithoutAManagerFailsToStart(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.spawnDaemon([]string{"--session-launcher", "systemd"})
	if err := d.wait(10 * time.Second); err == nil {
		t.Fatalf("agentd --session-launcher systemd without a user manager exited 0\n%s", d.stderr)
	}
	if !strings.Contains(d.stderr.String(), "no systemd user manager answers") {
		t.Errorf("agentd's log does not say why:\n%s", d.stderr)
	}
	h.writeConfig("session_launcher = \"units\"\nsession_cpu_weight = 20000\n")
	cmd := exec.Command(bin.agentd, "--check-config")
	cmd.Env = h.env()
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "session_launcher \"units\" is not auto, systemd or fork") {
		t.Errorf("check-config of a bad session_launcher: %v %s", err, out)
	}
}

// BenchmarkSpawnUnitVsFork measures spawn to running (and the stop and
// removal after) of a session started as a unit of the user manager
// against one forked by agentd, in the same run: the cost of the D-Bus
// round trips and of the manager's fork is the ratio.
func BenchmarkSpawnUnitVsFork(b *testing.B) {
	hu := newHomeTB(b)
	um := startUserManager(b, hu)
	um.installAgentd(nil)
	if out, err := um.systemctl("start", "agentd.socket", "agentd.service"); err != nil {
		b.Fatalf("start agentd: %v\n%s", err, out)
	}
	await(b, 10*time.Second, "agentd serving", func() bool { return hu.hello() == nil })
	hf := newHomeTB(b)
	hf.startDaemon(nil)
	cycle := func(h *home, name string) time.Duration {
		ctx := context.Background()
		c, err := wire.Dial(ctx, h.socket, wire.ClientOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		if _, err := c.Spawn(ctx, wire.SpawnParams{Name: name, Argv: []string{"sleep", "60"}}); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		if _, err := c.Stop(ctx, wire.StopParams{Name: name}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Rm(ctx, wire.RmParams{Name: name}); err != nil {
			b.Fatal(err)
		}
		return took
	}
	var unitT, forkT time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		unitT += cycle(hu, fmt.Sprintf("u%d", i))
		forkT += cycle(hf, fmt.Sprintf("f%d", i))
	}
	b.ReportMetric(float64(unitT.Microseconds())/1000/float64(b.N), "unit-spawn-ms")
	b.ReportMetric(float64(forkT.Microseconds())/1000/float64(b.N), "fork-spawn-ms")
	b.ReportMetric(float64(unitT)/float64(forkT), "unit/fork")
}
