package test

// `agentctl mcp` on agent desktops (issue 29's desktop part): the desktop
// target of the screen tools, desktop_new / desktop_rm / desktops, the
// loop guard per target, and a desktop that does not exist.

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/xvfbtest"
	"github.com/agentd/agentd/pkg/wire"
)

// deskPointer is a desktop's pointer, as xdotool (an independent witness)
// reads it with the desktop's DISPLAY and XAUTHORITY.
func deskPointer(t *testing.T, d wire.DesktopRow) (x, y int) {
	t.Helper()
	out, err := onDesktop(d, "xdotool", "getmouselocation").Output()
	if err != nil {
		t.Fatalf("xdotool getmouselocation on %s: %v", d.Display, err)
	}
	fmt.Sscanf(string(out), "x:%d y:%d", &x, &y)
	return x, y
}

func TestMCPDesktops(t *testing.T) {
	needDesktopTools(t, "openbox", "xterm", "xdotool", "xwininfo")
	t.Parallel()
	person := xvfbtest.Start(t, xvfbtest.Options{Width: 1024, Height: 768})
	h := newHome(t)
	h.startDaemon([]string{"--desktops", "--allow-act", "--display", person.Display})
	h.cleanDesktops()

	// Without --yes, making and removing desktops is refused; listing is not.
	ro := h.startMCP(t, false)
	ro.refused("desktop_new", map[string]any{"name": "m1"}, "disabled", "--yes")
	ro.refused("desktop_rm", map[string]any{"name": "m1"}, "disabled", "--yes")
	if sc, _ := ro.ok("desktops", nil); len(sc["desktops"].([]any)) != 0 {
		t.Fatalf("desktops before any: %v", sc)
	}
	if len(h.desktops()) != 0 {
		t.Fatal("a refused desktop_new made a desktop")
	}

	m := h.startMCP(t, true)
	// A desktop that does not exist: a tool error naming the fix, on
	// every screen tool.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"screenshot", map[string]any{"desktop": "nope"}},
		{"screen", map[string]any{"desktop": "nope"}},
		{"cursor_position", map[string]any{"desktop": "nope"}},
		{"act", map[string]any{"desktop": "nope", "actions": []map[string]any{{"kind": "key", "key": "a"}}}},
	} {
		sc := m.refused(c.tool, c.args, "screen_unavailable", `"nope"`, "desktop_new", "the desktops tool")
		if r := sc["reason"].(string); strings.Contains(r, "agentctl") {
			t.Errorf("%s on a missing desktop advises a command the model cannot run: %q", c.tool, r)
		}
	}
	m.refused("zoom", map[string]any{"desktop": "nope", "x": 0, "y": 0, "width": 10, "height": 10}, "screen_unavailable", `"nope"`, "desktop_new")
	m.refused("act", map[string]any{"desktop": "nope", "actions": []map[string]any{{"kind": "click", "x": 1, "y": 1}}}, "screen_unavailable", `"nope"`, "desktop_new")
	m.badArgs("screenshot", map[string]any{"desktop": "Not A Name"}, "desktop", "pattern")
	m.badArgs("desktop_new", map[string]any{"name": "new"}, "name")
	m.badArgs("desktop_new", map[string]any{"wm": "kde"}, "wm", "enum")

	// desktop_new makes one, desktops lists it, screen describes it.
	sc, _ := m.ok("desktop_new", map[string]any{"name": "m1", "size": "800x600"})
	if sc["name"] != "m1" || sc["status"] != "running" || sc["width"] != 800.0 || sc["height"] != 600.0 {
		t.Fatalf("desktop_new: %v", sc)
	}
	m1, ok := h.desktop("m1")
	if !ok {
		t.Fatal("desktop_new's desktop is not in agentctl desktop ls")
	}
	sc, res := m.ok("desktops", nil)
	if !strings.Contains(string(mustJSON(t, sc["desktops"])), `"m1"`) || !strings.Contains(text(res), "m1 (running)") {
		t.Errorf("desktops: %v / %q", sc, text(res))
	}
	sc, _ = m.ok("screen", map[string]any{"desktop": "m1"})
	if sc["desktop"] != "m1" || sc["width"] != 800.0 || sc["display"] != m1.Display {
		t.Errorf("screen of m1: %v", sc)
	}

	// Its screenshot is its size (800x600 fits the model box unscaled).
	sc, res = m.ok("screenshot", map[string]any{"desktop": "m1"})
	img := image(res)
	if img == nil {
		t.Fatalf("screenshot of m1 has no image: %s", mustJSON(t, res.Content))
	}
	dec, err := jpeg.Decode(bytes.NewReader(img.Data))
	if err != nil || dec.Bounds().Dx() != 800 || dec.Bounds().Dy() != 600 || sc["scale"] != 1.0 {
		t.Fatalf("screenshot of m1: %v %v %v, want an 800x600 image at scale 1", err, dec.Bounds(), sc)
	}
	if !strings.Contains(text(res), "desktop m1") {
		t.Errorf("screenshot text %q does not name the desktop", text(res))
	}

	// An xterm started on it through spawn's desktop; typed into by act.
	// An xterm mapped and focused may still drop the first keys, so it
	// reads probe lines until "go" arrives, and the test types probes
	// until one is seen: then every key reaches it, in order.
	dir := t.TempDir()
	typed, probe := filepath.Join(dir, "typed"), filepath.Join(dir, "probe")
	m.ok("spawn", map[string]any{"name": "xt", "desktop": "m1", "env": map[string]string{"LC_ALL": "C.UTF-8"},
		"argv": []string{"xterm", "-geometry", "60x8+0+0", "-e", "sh", "-c",
			"while read p; do [ \"$p\" = go ] && break; echo seen >> " + probe + "; done; cat > " + typed + "; exec sleep 600"}})
	await(t, 15*time.Second, "the xterm on m1", func() bool { return xwininfoHas(t, m1, "xterm") })
	px, py := pointer(t, person)
	await(t, 20*time.Second, "the xterm on m1 to take keys", func() bool {
		m.ok("act", map[string]any{"desktop": "m1", "actions": []map[string]any{{"kind": "click", "x": 100, "y": 40}, {"kind": "type", "text": "p\n"}}, "observe": false})
		end := time.Now().Add(2 * time.Second)
		for time.Now().Before(end) {
			if b, _ := os.ReadFile(probe); len(b) > 0 {
				return true
			}
			time.Sleep(20 * time.Millisecond)
		}
		return false
	})
	m.ok("act", map[string]any{"desktop": "m1", "actions": []map[string]any{
		{"kind": "type", "text": "go\ntyped on m1 äö\n"}, {"kind": "key", "key": "ctrl+d"}}})
	await(t, 10*time.Second, "the typed text in the xterm's file", func() bool { b, _ := os.ReadFile(typed); return len(b) >= len("typed on m1 äö\n") })
	if b, _ := os.ReadFile(typed); string(b) != "typed on m1 äö\n" {
		t.Errorf("the xterm on m1 received %q", b)
	}
	m.ok("act", map[string]any{"desktop": "m1", "actions": []map[string]any{{"kind": "move", "x": 700, "y": 500}}, "observe": false})
	if x, y := deskPointer(t, m1); x != 700 || y != 500 {
		t.Errorf("move to 700,500 on m1 put m1's pointer at %d,%d", x, y)
	}
	if x, y := pointer(t, person); x != px || y != py {
		t.Errorf("acting on m1 moved the user's pointer from %d,%d to %d,%d", px, py, x, y)
	}
	sc, _ = m.ok("cursor_position", map[string]any{"desktop": "m1"})
	if s, _ := sc["screen"].(map[string]any); s["x"] != 700.0 || s["y"] != 500.0 {
		t.Errorf("cursor_position on m1: %v, want 700,500", sc)
	}
	sc, _ = m.ok("zoom", map[string]any{"desktop": "m1", "x": 0, "y": 0, "width": 400, "height": 300, "format": "png"})
	if sc["width"] != 400.0 || sc["scale"] != 1.0 {
		t.Errorf("zoom on m1: %v", sc)
	}

	// act's space is per target: the user's display was never shot here.
	m.refused("act", map[string]any{"actions": []map[string]any{{"kind": "move", "x": 10, "y": 10}}}, "invalid_arguments", "take a screenshot first")

	// The loop guard counts per target: the same batch on two desktops,
	// interleaved, trips each one's guard at its own fourth batch, and the
	// refusal names the desktop.
	m.ok("desktop_new", map[string]any{"name": "m2", "size": "640x480", "wm": "none"})
	m.ok("screenshot", map[string]any{"desktop": "m2"})
	m.ok("screenshot", map[string]any{"desktop": "m1"})
	same := func(d string) map[string]any {
		return map[string]any{"desktop": d, "actions": []map[string]any{{"kind": "move", "x": 300, "y": 400}}}
	}
	for i := 0; i < 3; i++ {
		m.ok("act", same("m1"))
		m.ok("act", same("m2"))
	}
	m.refused("act", same("m1"), "refused", "loop guard", `desktop "m1"`, "fourth batch in a row")
	m.refused("act", same("m2"), "refused", "loop guard", `desktop "m2"`, "fourth batch in a row")
	// The user's display has a guard of its own, untouched.
	m.ok("screenshot", nil)
	m.ok("act", map[string]any{"actions": []map[string]any{{"kind": "move", "x": 300, "y": 400}}})

	// desktop_rm ends it; then it is a desktop that does not exist.
	sc, _ = m.ok("desktop_rm", map[string]any{"name": "m2"})
	if sc["name"] != "m2" || sc["removed"] != true {
		t.Errorf("desktop_rm: %v", sc)
	}
	if _, ok := h.desktop("m2"); ok {
		t.Error("m2 is still listed after desktop_rm")
	}
	m.refused("screenshot", map[string]any{"desktop": "m2"}, "screen_unavailable", "desktop_new")
	sc = m.refused("desktop_rm", map[string]any{"name": "m2"}, "screen_unavailable", "the desktops tool")
	if strings.Contains(sc["reason"].(string), "agentctl") {
		t.Errorf("desktop_rm of a removed desktop: %q advises agentctl", sc["reason"])
	}
	// A new m2 starts with no image: its act space was forgotten.
	m.ok("desktop_new", map[string]any{"name": "m2", "size": "400x320", "wm": "none"})
	m.refused("act", same("m2"), "invalid_arguments", `desktop "m2" first`)
	if strings.Contains(m.stderr.String(), "panic") {
		t.Errorf("agentctl mcp panicked:\n%s", m.stderr)
	}
}

// With desktops off in agentd, a desktop target is a tool error that says
// so and that the user must turn them on.
func TestMCPDesktopsDisabled(t *testing.T) {
	t.Parallel()
	person := xvfbtest.Start(t, xvfbtest.Options{Width: 1024, Height: 768})
	h := newHome(t)
	h.startDaemon([]string{"--allow-act", "--display", person.Display})
	m := h.startMCP(t, true)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"screenshot", map[string]any{"desktop": "d1"}},
		{"zoom", map[string]any{"desktop": "d1", "x": 0, "y": 0, "width": 10, "height": 10}},
		{"act", map[string]any{"desktop": "d1", "actions": []map[string]any{{"kind": "move", "x": 1, "y": 1}}}},
	} {
		m.refused(c.tool, c.args, "refused", "desktops = true", "ask the user")
	}
	m.refused("desktop_new", map[string]any{"name": "d1"}, "refused", "desktops = true", "ask the user")
	// The user's display still works.
	m.ok("screenshot", nil)
}
