package test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/xvfbtest"
	"github.com/agentd/agentd/pkg/wire"
)

// TestFailedSpawnsAnswerSpawnFailedWithTheCause spawns programs that cannot
// start through the real agentctl and agentd: each answers spawn_failed
// (exit 14) naming the cause and the path, and the name is free again at
// once (nothing of the session is left).
func TestFailedSpawnsAnswerSpawnFailedWithTheCause(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing binary", []string{"spawn", "t1", "--", "/nonexistent/bin"}, "exec /nonexistent/bin: no such file or directory"},
		{"missing cwd", []string{"spawn", "t1", "--cwd", "/nonexistent/dir", "--", "true"}, "working directory /nonexistent/dir: no such file or directory"},
		{"not executable", []string{"spawn", "t1", "--", plain}, "exec " + plain + ": permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := h.agentctl("", tc.args...)
			if code != 14 {
				t.Fatalf("agentctl %s: exit %d, want 14 (spawn_failed)\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, out, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("agentctl %s: stderr %q, want it to contain %q", strings.Join(tc.args, " "), errOut, tc.want)
			}
			if _, err := os.Lstat(filepath.Join(h.state, "agentd", "sessions", "t1")); !os.IsNotExist(err) {
				t.Errorf("session directory after a failed spawn: %v, want none", err)
			}
			h.ctl(13, "status", "t1")
		})
	}
}

// TestScreenshotNeverReplacesAFileUnasked writes screenshots to a path
// through the real daemon and a real X server: an existing file is refused
// (invalid_params) unless overwrite, and a symbolic link is never written
// through, overwrite or not.
func TestScreenshotNeverReplacesAFileUnasked(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 320, Height: 200})
	h := newHome(t)
	h.startDaemon([]string{"--display", srv.Display})
	c := h.client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	file := filepath.Join(dir, "shot.png")
	if err := os.WriteFile(file, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := c.Screenshot(ctx, wire.ScreenshotParams{Path: file})
	if !errors.Is(err, wire.ErrInvalidParams) {
		t.Fatalf("screenshot over an existing file: got %v, want invalid_params", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "precious" {
		t.Fatalf("the refused screenshot changed the file to %d bytes", len(b))
	}
	if _, err := c.Screenshot(ctx, wire.ScreenshotParams{Path: file, Overwrite: true}); err != nil {
		t.Fatalf("screenshot with overwrite: %v", err)
	}
	if b, _ := os.ReadFile(file); !strings.HasPrefix(string(b), "\x89PNG") {
		t.Fatalf("screenshot with overwrite left %q..., want a PNG", b[:min(len(b), 8)])
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("target"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.png")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, ow := range []bool{false, true} {
		if _, err := c.Screenshot(ctx, wire.ScreenshotParams{Path: link, Overwrite: ow}); err == nil {
			t.Errorf("screenshot to a symlink (overwrite %v) succeeded, want a refusal", ow)
		}
		if b, _ := os.ReadFile(target); string(b) != "target" {
			t.Fatalf("screenshot (overwrite %v) wrote through the symlink", ow)
		}
	}
}

// TestBrokenSessionsThroughAgentctl damages the manifests of running
// sessions, with the daemon up and across a daemon restart: list shows each
// as broken with its reason, status describes it (exit 0, not internal),
// and rm --force and stop end every process of it and remove it.
func TestBrokenSessionsThroughAgentctl(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	d := h.startDaemon(nil)
	sessions := filepath.Join(h.state, "agentd", "sessions")
	pids := map[string][2]int{}
	for _, n := range []string{"vic", "trunc", "bare"} {
		h.ctl(0, "spawn", n, "--", "sh", "-c", "sleep 1000 & exec cat")
		var st struct{ Result wire.SessionStatus }
		if err := json.Unmarshal([]byte(h.ctl(0, "--json", "status", n)), &st); err != nil {
			t.Fatal(err)
		}
		pids[n] = [2]int{st.Result.WorkerPID, st.Result.ProgramPID}
	}
	man := func(n string) string { return filepath.Join(sessions, n, "manifest.json") }
	os.WriteFile(man("vic"), []byte(`{"name":"vic","status":5}`), 0o600)
	b, _ := os.ReadFile(man("trunc"))
	os.WriteFile(man("trunc"), b[:len(b)/3], 0o600)

	listed := func() map[string]wire.SessionRow {
		var l struct{ Result wire.ListResult }
		if err := json.Unmarshal([]byte(h.ctl(0, "--json", "list")), &l); err != nil {
			t.Fatal(err)
		}
		rows := map[string]wire.SessionRow{}
		for _, r := range l.Result.Sessions {
			rows[r.Name] = r
		}
		return rows
	}
	for _, n := range []string{"vic", "trunc"} {
		if r := listed()[n]; r.Status != wire.StatusBroken || !strings.Contains(r.Reason, "damaged") {
			t.Errorf("list with the daemon up: %s is %+v, want broken with a reason", n, r)
		}
	}
	// A daemon restart: nothing attached any more; the manifest of bare
	// goes too, with its socket.
	d.cmd.Process.Kill()
	d.wait(10 * time.Second)
	os.Remove(man("bare"))
	os.Remove(filepath.Join(h.runtime, "agentd", "sessions", "bare.sock"))
	h.startDaemon(nil)
	rows := listed()
	for _, n := range []string{"vic", "trunc", "bare"} {
		if r := rows[n]; r.Status != wire.StatusBroken || r.Reason == "" {
			t.Errorf("list after restart: %s is %+v, want broken with a reason", n, r)
		}
		if out := h.ctl(0, "status", n); !strings.Contains(out, "broken") {
			t.Errorf("status %s: %q, want it to say broken", n, out)
		}
	}
	h.ctl(17, "rm", "vic")
	h.ctl(0, "rm", "--force", "vic")
	h.ctl(0, "rm", "--force", "trunc")
	h.ctl(0, "stop", "bare")
	h.ctl(0, "rm", "bare")
	for n, p := range pids {
		await(t, 30*time.Second, "every process of "+n+" gone", func() bool {
			return !alive(p[0]) && !alive(p[1])
		})
		if _, err := os.Lstat(filepath.Join(sessions, n)); !os.IsNotExist(err) {
			t.Errorf("%s after rm: %v, want no directory", n, err)
		}
	}
	if rows := listed(); len(rows) != 0 {
		t.Errorf("list after rm: %+v, want nothing", rows)
	}
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// sessionToken reads the secret a session's program found in its
// environment, as any process inside the session sees it.
func (h *home) sessionToken(name string) string {
	h.t.Helper()
	var st struct{ Result wire.SessionStatus }
	if err := json.Unmarshal([]byte(h.ctl(0, "--json", "status", name)), &st); err != nil {
		h.t.Fatal(err)
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(st.Result.ProgramPID) + "/environ")
	if err != nil {
		h.t.Fatal(err)
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, wire.SessionTokenEnv+"="); ok {
			return v
		}
	}
	h.t.Fatalf("session %s's program has no %s", name, wire.SessionTokenEnv)
	return ""
}

// TestBindingASessionNeedsProof: a process outside session vic cannot bind
// a channel to it (by name, by claiming AGENTD_SESSION, or with a wrong
// token): permission_denied, exit 23, and asks still reach the real program
// in its terminal. A listener run inside a session, with its token removed
// from the environment, binds by being a descendant of the session's
// worker; a reply to an ask sent to it from another connection is refused
// and does not answer the ask.
func TestBindingASessionNeedsProof(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "vic", "--", "python3", "-i", "-q")
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"by name", nil, []string{"--session", "vic"}},
		{"claiming AGENTD_SESSION", []string{"AGENTD_SESSION=vic"}, []string{"--cc-session-id", "cc-vic"}},
		{"wrong token", []string{"AGENTD_SESSION_TOKEN=" + strings.Repeat("0", 64)}, []string{"--session", "vic"}},
		{"another session's token", []string{"AGENTD_SESSION_TOKEN=x"}, []string{"--session", "vic"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lp := h.startListenEnv(tc.env, tc.args...)
			select {
			case <-lp.done:
			case <-time.After(30 * time.Second):
				t.Fatal("the refused listener did not exit")
			}
			if code := lp.cmd.ProcessState.ExitCode(); code != 23 || !strings.Contains(lp.stderr.String(), "needs proof") {
				t.Errorf("listen %v: exit %d, stderr %q; want 23 (permission_denied) saying proof is needed", tc.args, code, lp.stderr)
			}
		})
	}
	if out := h.ctl(0, "channel", "list"); strings.Contains(out, "vic") {
		t.Errorf("a refused binding is listed:\n%s", out)
	}
	if out := h.ctl(0, "--timeout", "30s", "ask", "vic", "print(6*7)"); !strings.Contains(out, "42") {
		t.Errorf("ask after refused bindings answered %q, want 42 from the program", out)
	}

	// Inside a session: a descendant of its worker, no token needed.
	h.ctl(0, "spawn", "in", "--", "env", "-u", "AGENTD_SESSION_TOKEN", bin.agentctl, "channel", "listen", "--id", "in.ch", "--session", "in")
	if row := h.awaitChannel("in.ch"); row.Session != "in" {
		t.Fatalf("the listener inside the session registered %+v, want bound to in", row)
	}
	c := h.client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	asked := make(chan error, 1)
	go func() {
		_, err := c.Ask(ctx, wire.AskParams{Name: "in", Text: "what is 6*7?", TimeoutMS: 5000})
		asked <- err
	}()
	var askID string
	await(t, 30*time.Second, "the ask shown by the listener inside the session", func() bool {
		out, _, _ := h.agentctl("", "snapshot", "in")
		if i := strings.Index(out, `"ask_id":"`); i >= 0 {
			rest := out[i+len(`"ask_id":"`):]
			if j := strings.IndexByte(rest, '"'); j > 0 {
				askID = rest[:j]
				return true
			}
		}
		return false
	})
	_, errOut, code := h.agentctl("", "channel", "reply", askID, "43")
	if code != 23 {
		t.Errorf("a reply from another connection: exit %d (%s), want 23 (permission_denied)", code, errOut)
	}
	if err := <-asked; !errors.Is(err, wire.ErrTimeout) {
		t.Errorf("the ask after a spoofed reply: %v, want a timeout (no reply from the channel's holder)", err)
	}
}

// TestUnsafeStateDirectoryIsRefused: agentd refuses to start, naming the
// fix, on a state directory (or its sessions/) that is a symbolic link,
// open to others, or another user's; with the planted directory of
// another user (root only, through chown) nothing of it is listed, since
// the daemon never serves.
func TestUnsafeStateDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		plant  func(t *testing.T, state string)
		want   string
		asRoot bool
	}{
		{"symlink", func(t *testing.T, state string) {
			other := filepath.Join(t.TempDir(), "other")
			mkdir(t, other, 0o700)
			symlink(t, other, state)
		}, "is a symbolic link", false},
		{"open to others", func(t *testing.T, state string) {
			mkdir(t, state, 0o777)
		}, "run chmod 700", false},
		{"sessions is a symlink", func(t *testing.T, state string) {
			mkdir(t, state, 0o700)
			other := filepath.Join(t.TempDir(), "other")
			mkdir(t, other, 0o700)
			symlink(t, other, filepath.Join(state, "sessions"))
		}, "is a symbolic link", false},
		{"another user's, through a link", func(t *testing.T, state string) {
			other := filepath.Join(t.TempDir(), "other")
			mkdir(t, other, 0o777)
			mkdir(t, filepath.Join(other, "sessions", "fake"), 0o777)
			os.WriteFile(filepath.Join(other, "sessions", "fake", "manifest.json"), []byte(`{"name":"fake","status":"running"}`), 0o666)
			if err := os.Chown(other, 65534, 65534); err != nil {
				t.Skipf("cannot hand a directory to another user: %v", err)
			}
			symlink(t, other, state)
		}, "is a symbolic link", true},
		{"another user's", func(t *testing.T, state string) {
			mkdir(t, state, 0o700)
			if err := os.Chown(state, 65534, 65534); err != nil {
				t.Skipf("cannot hand a directory to another user: %v", err)
			}
		}, "is owned by uid 65534", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.asRoot && os.Getuid() != 0 {
				t.Skip("planting another user's directory needs root (chown); run the tests as root to cover it")
			}
			h := newHome(t)
			mkdir(t, h.state, 0o700)
			state := filepath.Join(h.state, "agentd")
			tc.plant(t, state)
			d := h.spawnDaemon(nil)
			if err := d.wait(30 * time.Second); err == nil {
				t.Fatalf("agentd started on an unsafe state directory (%s)", tc.name)
			}
			if !strings.Contains(d.stderr.String(), tc.want) {
				t.Errorf("agentd's refusal %q does not say %q", d.stderr, tc.want)
			}
		})
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestFullDiskThroughAgentctl: with the state directory on a small file
// system that is full, spawn answers spawn_failed (exit 14) naming the full
// disk, fast, and leaves nothing; a running session goes on and rm --force
// removes it and every process of it without needing space. Root only (a
// tmpfs is mounted), skipped with a message otherwise.
func TestFullDiskThroughAgentctl(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("a full disk is made with a small tmpfs, which needs root; run the tests as root to cover it")
	}
	h := newHome(t)
	mkdir(t, h.state, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", h.state).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk (%v: %s); skipped", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", h.state).Run() })
	h.startDaemon(nil)
	h.ctl(0, "spawn", "keep", "--", "cat")
	var st struct{ Result wire.SessionStatus }
	if err := json.Unmarshal([]byte(h.ctl(0, "--json", "status", "keep")), &st); err != nil {
		t.Fatal(err)
	}
	filler, err := os.Create(filepath.Join(h.state, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break
		}
	}
	for {
		if _, err := filler.Write(chunk[:1]); err != nil {
			break
		}
	}
	filler.Close()

	start := time.Now()
	out, errOut, code := h.agentctl("", "spawn", "t1", "--", "cat")
	if code != 14 || !strings.Contains(errOut, "no space left on device in "+filepath.Join(h.state, "agentd", "sessions")) {
		t.Errorf("spawn on a full disk: exit %d, stdout %q, stderr %q; want 14 naming the full disk and the directory", code, out, errOut)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("spawn on a full disk took %s, want it to fail fast", took)
	}
	if _, err := os.Lstat(filepath.Join(h.state, "agentd", "sessions", "t1")); !os.IsNotExist(err) {
		t.Errorf("session directory after the failed spawn: %v, want none", err)
	}
	h.ctl(0, "send", "keep", "still here")
	h.ctl(0, "rm", "--force", "keep")
	await(t, 30*time.Second, "every process of keep gone", func() bool {
		return !alive(st.Result.WorkerPID) && !alive(st.Result.ProgramPID)
	})
	if out := h.ctl(0, "list"); strings.Contains(out, "keep") || strings.Contains(out, "t1") {
		t.Errorf("list after rm on a full disk:\n%s", out)
	}
}
