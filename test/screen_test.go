package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/xvfbtest"
	"github.com/agentd/agentd/pkg/wire"
)

// pointer asks xdotool, an independent witness, where the pointer is.
func pointer(t testing.TB, srv *xvfbtest.Server) (x, y int) {
	t.Helper()
	out, err := srv.Command("xdotool", "getmouselocation").Output()
	if err != nil {
		t.Fatalf("xdotool getmouselocation: %v", err)
	}
	fmt.Sscanf(string(out), "x:%d y:%d", &x, &y)
	return x, y
}

func TestScreenThroughAgentctl(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 1024, Height: 768})
	h := newHome(t)
	h.startDaemon([]string{"--allow-act", "--display", srv.Display})

	var scr wire.ScreenResult
	json.Unmarshal([]byte(h.ctl(0, "--json", "screen")), &struct{ Result *wire.ScreenResult }{&scr})
	if !scr.Connected || scr.Width != 1024 || scr.Height != 768 || !scr.AllowAct {
		t.Fatalf("screen = %+v, want connected 1024x768 with acting allowed", scr)
	}

	file := filepath.Join(t.TempDir(), "shot.png")
	h.ctl(0, "screenshot", "-o", file, "--region", "10,20,300,200")
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil || img.Bounds().Dx() != 300 || img.Bounds().Dy() != 200 {
		t.Errorf("screenshot: %v, bounds %v; want a 300x200 PNG", err, img.Bounds())
	}
	// The file exists now: agentctl says --force, and --force replaces it.
	if _, errOut, code := h.agentctl("", "screenshot", "-o", file); code != 2 || !strings.Contains(errOut, "--force") {
		t.Errorf("screenshot over an existing file: exit %d %q, want 2 naming --force", code, errOut)
	}
	h.ctl(0, "screenshot", "-o", file, "--force", "--region", "0,0,30,20")
	if f, err := os.Open(file); err == nil {
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() != 30 {
			t.Errorf("--force left %v %v, want the new 30x20 image", img.Bounds(), err)
		}
	}
	// -o - writes the image itself to stdout.
	out := h.ctl(0, "screenshot", "-o", "-", "--jpeg", "70", "--max-width", "512")
	if !strings.HasPrefix(out, "\xff\xd8") {
		t.Errorf("screenshot -o - --jpeg wrote %d bytes not starting like a JPEG", len(out))
	}

	h.ctl(0, "act", `[{"kind":"move","x":100,"y":100},{"kind":"move","x":321,"y":234}]`)
	if x, y := pointer(t, srv); x != 321 || y != 234 {
		t.Errorf("after act the pointer is at %d,%d (xdotool), want 321,234", x, y)
	}
	// The whole request form, read from stdin, without observation.
	_, errOut, code := h.agentctl(`{"actions":[{"kind":"move","x":5000,"y":1}],"observe":false}`, "act", "-")
	if code != 2 || !strings.Contains(errOut, "action 1") {
		t.Errorf("act outside the screen: exit %d %q, want 2 naming action 1", code, errOut)
	}
	// Typing arrives exactly, in a real xterm.
	if _, err := exec.LookPath("xterm"); err == nil {
		typed := filepath.Join(t.TempDir(), "typed.txt")
		xt := srv.Command("xterm", "-geometry", "80x10+0+0", "-e", "sh", "-c", "cat > "+typed)
		xt.Env = append(xt.Env, "LC_ALL=C.UTF-8")
		if err := xt.Start(); err != nil {
			t.Fatal(err)
		}
		defer xt.Process.Kill()
		text := "hello /_\\@~|{} äöüß é Привет 漢字 🙂"
		batch, _ := json.Marshal(map[string]any{"actions": []map[string]any{
			{"kind": "click", "x": 100, "y": 50}, {"kind": "type", "text": text + "\n"}, {"kind": "key", "key": "ctrl+d"}}})
		await(t, 10*time.Second, "xterm typing the text", func() bool {
			// The xterm may not be mapped yet; retry the batch until it arrives.
			h.agentctl(string(batch), "act", "-")
			b, _ := os.ReadFile(typed)
			return strings.Contains(string(b), text)
		})
		b, _ := os.ReadFile(typed)
		if !strings.HasPrefix(string(b), text+"\n") {
			t.Errorf("xterm received %q, want %q", b, text+"\n")
		}
	}
}

func TestScreenConsentAndAudit(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{})
	h := newHome(t)
	h.startDaemon([]string{"--display", srv.Display})
	x0, y0 := pointer(t, srv)
	_, errOut, code := h.agentctl("", "act", `[{"kind":"move","x":77,"y":66}]`)
	if code != 22 || !strings.Contains(errOut, "--allow-act") {
		t.Errorf("act without consent: exit %d %q, want 22 saying --allow-act", code, errOut)
	}
	if x, y := pointer(t, srv); x != x0 || y != y0 {
		t.Errorf("a refused batch moved the pointer to %d,%d", x, y)
	}
	// Screenshots need no consent.
	h.ctl(0, "screenshot", "-o", filepath.Join(t.TempDir(), "s.png"))
	// The refusal is audited, without the text of anything typed.
	_, _, _ = h.agentctl("", "act", `[{"kind":"type","text":"secret-words"}]`)
	audit, err := os.ReadFile(filepath.Join(h.state, "agentd", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(audit, []byte("\n")); n < 2 || bytes.Contains(audit, []byte("secret-words")) || !bytes.Contains(audit, []byte(bin.agentctl)) {
		t.Errorf("audit log (%d lines) must record both batches with the caller's executable and never the typed text:\n%s", n, audit)
	}
}

func TestDisplayComesAndGoes(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{})
	srv.Stop() // keep the number, lose the server
	h := newHome(t)
	h.startDaemon([]string{"--display", srv.Display})
	_, errOut, code := h.agentctl("", "screenshot", "-o", "-")
	if code != 24 || !strings.Contains(errOut, srv.Display) {
		t.Errorf("screenshot with no X server: exit %d %q, want 24 naming %s", code, errOut, srv.Display)
	}
	srv.Restart(t)
	await(t, 10*time.Second, "the daemon connecting to the new X server", func() bool {
		_, _, code := h.agentctl("", "screenshot", "-o", filepath.Join(h.runtime, "s.png"))
		return code == 0
	})
	srv.Restart(t)
	await(t, 10*time.Second, "the daemon reconnecting after a restart", func() bool {
		_, _, code := h.agentctl("", "screenshot", "-o", filepath.Join(h.runtime, "s2.png"))
		return code == 0
	})
}

// TestScreenRecordThroughAgentctl turns record_screen on, runs batches, and
// writes the screen record: a page with each batch's image and actions.
func TestScreenRecordThroughAgentctl(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 800, Height: 600})
	h := newHome(t)
	h.startDaemon([]string{"--allow-act", "--record-screen", "--display", srv.Display})
	h.ctl(0, "act", `[{"kind":"move","x":100,"y":100}]`)
	h.ctl(0, "act", `[{"kind":"click","x":200,"y":150}]`)
	dir := filepath.Join(t.TempDir(), "record")
	var res wire.RecordScreenResult
	json.Unmarshal([]byte(h.ctl(0, "--json", "record", "--screen", "-o", dir)), &struct{ Result *wire.RecordScreenResult }{&res})
	if res.Batches != 2 || res.Images != 2 {
		t.Fatalf("screen record %+v, want 2 batches with 2 images", res)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`src="0001.png"`, `src="0002.png"`, "move at 100,100", "click at 200,150"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	// Bad input: the directory now exists; a name; no directory.
	if _, errOut, code := h.agentctl("", "record", "--screen", "-o", dir); code != 2 || !strings.Contains(errOut, "not empty") {
		t.Errorf("record --screen into a full directory: exit %d %q, want 2", code, errOut)
	}
	if _, _, code := h.agentctl("", "record", "--screen", "-o", dir, "--force"); code != 0 {
		t.Errorf("record --screen --force: exit %d", code)
	}
	if _, errOut, code := h.agentctl("", "record", "--screen"); code != 2 || !strings.Contains(errOut, "-o DIR") {
		t.Errorf("record --screen without -o: exit %d %q", code, errOut)
	}
}
