package test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
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
