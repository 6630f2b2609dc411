package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// sessionStatus is `agentctl --json status NAME`'s result.
func sessionStatus(t *testing.T, h *home, name string) wire.SessionStatus {
	t.Helper()
	var env struct {
		Result wire.SessionStatus `json:"result"`
	}
	out := h.ctl(0, "--json", "status", name)
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("status --json %s: %v\n%s", name, err, out)
	}
	return env.Result
}

// simulateReboot kills agentd and every worker and program of names with
// SIGKILL, as a machine going down does, and presents a new boot id.
func simulateReboot(t *testing.T, h *home, d *daemonProc, bootFile, newBoot string, names ...string) {
	t.Helper()
	var pids []int
	for _, name := range names {
		st := sessionStatus(t, h, name)
		pids = append(pids, st.WorkerPID, st.ProgramPID)
	}
	d.cmd.Process.Kill()
	d.wait(5 * time.Second)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range pids {
		await(t, 5*time.Second, "the session's processes to die", func() bool { return syscall.Kill(pid, 0) != nil })
	}
	if err := os.WriteFile(bootFile, []byte(newBoot+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// awaitRestarted waits until name runs again after a restart. It asks
// for the status, which judges the session (a worker found gone marks it
// failed at once), as a person looking would.
func awaitRestarted(t *testing.T, h *home, name string, d time.Duration) {
	t.Helper()
	await(t, d, name+" running again", func() bool {
		st := sessionStatus(t, h, name)
		return st.Status == wire.StatusRunning && st.Restarts >= 1
	})
}

// TestSessionsComeBackAfterASimulatedReboot: agentd and every session die
// at once and the boot id changes; the next agentd starts the on-reboot
// session again within 2 s with its environment, the others failed; then
// agentctl restart brings back one by hand.
func TestSessionsComeBackAfterASimulatedReboot(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	boot := filepath.Join(t.TempDir(), "boot_id")
	if err := os.WriteFile(boot, []byte("boot-one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	seam := session.BootIDFileEnv + "=" + boot
	d := h.startDaemon(nil, seam)
	prog := []string{"--", "sh", "-c", `echo "value=$KEEP_ME"; exec cat`}
	h.ctl(0, append([]string{"spawn", "keep", "--restart", "on-reboot", "--env", "KEEP_ME=kept-value", "--size", "90x25"}, prog...)...)
	h.ctl(0, append([]string{"spawn", "plain", "--env", "KEEP_ME=plain-value"}, prog...)...)
	// Bad input: refused, nothing made.
	if _, errOut, code := h.agentctl("", "spawn", "bad", "--restart", "sometimes", "--", "cat"); code != 2 || !strings.Contains(errOut, "no, on-reboot or always") {
		t.Errorf("spawn --restart sometimes: exit %d, %q; want 2 naming the policies", code, errOut)
	}
	if _, _, code := h.agentctl("", "status", "bad"); code == 0 {
		t.Error("a refused spawn left a session")
	}
	if st := sessionStatus(t, h, "keep"); st.Restart != wire.RestartOnReboot || st.BootID != "boot-one" {
		t.Fatalf("keep: restart %q boot %q, want on-reboot, boot-one", st.Restart, st.BootID)
	}
	await(t, 10*time.Second, "keep's first output", func() bool { return strings.Contains(h.ctl(0, "logs", "keep"), "value=kept-value") })

	simulateReboot(t, h, d, boot, "boot-two", "keep", "plain")
	start := time.Now()
	h.startDaemon(nil, seam)
	// The bar (2 s) is a figure, logged; under the whole suite's load
	// beside CPU hogs, a deadline.
	awaitRestarted(t, h, "keep", 30*time.Second)
	t.Logf("keep running again %s after agentd was started (the bar: 2 s)", time.Since(start))
	if out := h.ctl(0, "list"); !strings.Contains(out, "(restarted 1)") {
		t.Errorf("list does not show the restart:\n%s", out)
	}
	st := sessionStatus(t, h, "keep")
	if st.Restarts != 1 || st.BootID != "boot-two" || st.Cols != 90 || st.Rows != 25 {
		t.Errorf("keep after the reboot: restarts %d boot %q size %dx%d; want 1, boot-two, 90x25", st.Restarts, st.BootID, st.Cols, st.Rows)
	}
	if st := sessionStatus(t, h, "plain"); st.Status != wire.StatusFailed || st.Termination != wire.TermHostDeath {
		t.Errorf("plain after the reboot: %s (%s), want failed (host_death)", st.Status, st.Termination)
	}
	// The log reads across the restart: the old output, the record, the new output.
	await(t, 10*time.Second, "keep's output after the restart", func() bool {
		return strings.Count(h.ctl(0, "logs", "keep"), "value=kept-value") == 2
	})
	events := h.ctl(0, "logs", "keep", "--events")
	if !strings.Contains(events, `"type":"restarted"`) || !strings.Contains(events, `"reason":"reboot"`) || !strings.Contains(events, "boot-two") {
		t.Errorf("no restarted record in the events:\n%s", events)
	}
	if strings.Contains(h.ctl(0, "--json", "status", "keep"), "kept-value") {
		t.Error("status shows an environment value")
	}

	// By hand: an ended session; a running one only with --force.
	out := h.ctl(0, "restart", "plain")
	if !strings.Contains(out, "plain running") || !strings.Contains(out, "restart 1") {
		t.Errorf("agentctl restart plain: %q", out)
	}
	await(t, 10*time.Second, "plain's output after the restart", func() bool {
		return strings.Count(h.ctl(0, "logs", "plain"), "value=plain-value") == 2
	})
	if _, errOut, code := h.agentctl("", "restart", "keep"); code != 17 || !strings.Contains(errOut, "--force") {
		t.Errorf("restart of a running session: exit %d, %q; want 17 naming --force", code, errOut)
	}
	h.ctl(0, "restart", "--force", "keep")
	if st := sessionStatus(t, h, "keep"); st.Status != wire.StatusRunning || st.Restarts != 2 {
		t.Errorf("after restart --force: %s, %d restarts; want running, 2", st.Status, st.Restarts)
	}
}

// TestADesktopSessionComesBackOnANewDesktop: a session spawned on a
// desktop made for it loses both in the reboot; the next agentd makes it
// a new desktop and starts it there, with that desktop's display.
func TestADesktopSessionComesBackOnANewDesktop(t *testing.T) {
	needDesktopTools(t, "xdpyinfo")
	t.Parallel()
	h := newHome(t)
	boot := filepath.Join(t.TempDir(), "boot_id")
	writeFile(t, boot, "boot-one\n")
	seam := session.BootIDFileEnv + "=" + boot
	args := []string{"--desktops", "--display", "none"}
	d := h.startDaemon(args, seam)
	h.cleanDesktops()
	h.ctl(0, "spawn", "gui", "--desktop", "new", "--restart", "on-reboot", "--", "sh", "-c", `echo "on=$DISPLAY"; xdpyinfo >/dev/null && echo "display answers"; exec cat`)
	dk, ok := h.desktop("gui")
	if !ok {
		t.Fatalf("no desktop made for gui: %+v", h.desktops())
	}
	await(t, 10*time.Second, "the program on its desktop", func() bool { return strings.Contains(h.ctl(0, "logs", "gui"), "display answers") })

	// The reboot takes the desktop too.
	syscall.Kill(dk.WorkerPID, syscall.SIGKILL)
	syscall.Kill(dk.ServerPID, syscall.SIGKILL)
	simulateReboot(t, h, d, boot, "boot-two", "gui")
	h.startDaemon(args, seam)
	awaitRestarted(t, h, "gui", 5*time.Second)
	await(t, 10*time.Second, "the restarted program on a desktop that answers", func() bool {
		return strings.Count(h.ctl(0, "logs", "gui"), "display answers") == 2
	})
	var now wire.DesktopRow
	for _, x := range h.desktops() {
		if x.Session == "gui" && x.Status == wire.DesktopRunning {
			now = x
		}
	}
	if now.Display == "" || !strings.Contains(h.ctl(0, "logs", "gui"), "on="+now.Display) {
		t.Errorf("the restarted program is not on the running desktop %+v:\n%s", now, h.ctl(0, "logs", "gui"))
	}
}
