package test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// mustJSON marshals v for a test's comparisons.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mcpServer is `agentctl mcp` driven by the SDK's client in a subprocess.
type mcpServer struct {
	t      *testing.T
	cs     *mcp.ClientSession
	stderr *syncBuffer
	ctx    context.Context
}

// startMCP starts `agentctl mcp` (with --yes when yes, and extra flags)
// against h's socket.
func (h *home) startMCP(t *testing.T, yes bool, extra ...string) *mcpServer {
	t.Helper()
	args := []string{"mcp"}
	if yes {
		args = append(args, "--yes")
	}
	args = append(args, extra...)
	cmd := exec.Command(bin.agentctl, args...)
	cmd.Env = h.env()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to agentctl mcp: %v\nstderr: %s", err, stderr)
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("agentctl mcp stderr:\n%s", stderr)
		}
	})
	return &mcpServer{t: t, cs: cs, stderr: stderr, ctx: ctx}
}

// call calls a tool and insists on a result (not a protocol error) with a
// top-level ok, and isError set exactly when ok is false (MCP's tool-level
// error); it returns the structured content.
func (m *mcpServer) call(name string, args any) (map[string]any, *mcp.CallToolResult) {
	m.t.Helper()
	res, err := m.cs.CallTool(m.ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		m.t.Fatalf("%s %v: protocol error %v, want a result", name, args, err)
	}
	var sc map[string]any
	if err := json.Unmarshal(mustJSON(m.t, res.StructuredContent), &sc); err != nil || sc == nil {
		m.t.Fatalf("%s: structured content %v is not an object", name, res.StructuredContent)
	}
	ok, isBool := sc["ok"].(bool)
	if !isBool {
		m.t.Fatalf("%s: structured content has no boolean ok: %v", name, sc)
	}
	if res.IsError == ok {
		m.t.Fatalf("%s %v: isError %v with ok %v (%s): a refusal is a tool error, a success is not", name, args, res.IsError, ok, text(res))
	}
	return sc, res
}

// ok calls a tool that must succeed.
func (m *mcpServer) ok(name string, args map[string]any) (map[string]any, *mcp.CallToolResult) {
	m.t.Helper()
	sc, res := m.call(name, args)
	if sc["ok"] != true {
		m.t.Fatalf("%s %v: %v, want ok true", name, args, sc)
	}
	return sc, res
}

// refused calls a tool that must answer ok false (isError) with code, and
// a reason holding every one of want.
func (m *mcpServer) refused(name string, args any, code string, want ...string) map[string]any {
	m.t.Helper()
	sc, _ := m.call(name, args)
	reason, _ := sc["reason"].(string)
	if sc["ok"] != false || sc["code"] != code {
		m.t.Fatalf("%s %v: %v, want ok false with code %s", name, args, sc, code)
	}
	for _, w := range want {
		if !strings.Contains(reason, w) {
			m.t.Errorf("%s %v: reason %q does not say %q", name, args, reason, w)
		}
	}
	return sc
}

// badArgs calls a tool with arguments that do not fit: a tool error
// (isError, code invalid_arguments) whose reason holds every one of want.
func (m *mcpServer) badArgs(name string, args any, want ...string) {
	m.t.Helper()
	m.refused(name, args, "invalid_arguments", want...)
}

// malformed calls a tool that must be a protocol error whose message holds
// every one of want: only an unknown tool is.
func (m *mcpServer) malformed(name string, args any, want ...string) {
	m.t.Helper()
	res, err := m.cs.CallTool(m.ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err == nil {
		m.t.Fatalf("%s %v: result %s, want a protocol error", name, args, mustJSON(m.t, res))
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			m.t.Errorf("%s %v: error %q does not say %q", name, args, err, w)
		}
	}
}

// text is a result's text content.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// image is a result's image content, or nil.
func image(res *mcp.CallToolResult) *mcp.ImageContent {
	for _, c := range res.Content {
		if i, ok := c.(*mcp.ImageContent); ok {
			return i
		}
	}
	return nil
}

var (
	lookTools = []string{"list", "status", "snapshot", "logs", "wait", "screenshot", "zoom", "cursor_position", "screen", "desktops", "channels"}
	actTools  = []string{"spawn", "ask", "send", "resize", "stop", "restart", "rm", "push", "act", "desktop_new", "desktop_rm"}
)

func TestMCPToolsLookThenAct(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 1920, Height: 1080})
	h := newHome(t)
	h.startDaemon([]string{"--allow-act", "--display", srv.Display})
	h.ctl(0, "spawn", "s1", "--", "sh")

	ro := h.startMCP(t, false)
	tools, err := ro.cs.ListTools(ro.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		disabled := strings.Contains(tl.Description, "DISABLED") && strings.Contains(tl.Description, "--yes")
		if disabled != slices.Contains(actTools, tl.Name) {
			t.Errorf("read-only server: %s's description says disabled: %v; want it only on acting tools:\n%s", tl.Name, disabled, tl.Description)
		}
	}
	if want := append(slices.Clone(lookTools), actTools...); !slices.Equal(names, want) {
		t.Errorf("tools %v, want look then act: %v", names, want)
	}

	// Every look tool answers.
	sc, _ := ro.ok("list", nil)
	if !strings.Contains(string(mustJSON(t, sc["sessions"])), `"s1"`) {
		t.Errorf("list: %v, want s1", sc)
	}
	sc, _ = ro.ok("status", map[string]any{"name": "s1"})
	if sc["status"] != "running" {
		t.Errorf("status: %v, want running", sc)
	}
	ro.ok("snapshot", map[string]any{"name": "s1"})
	sc, _ = ro.ok("logs", map[string]any{"name": "s1", "limit": 5})
	if ev, _ := sc["events"].([]any); len(ev) == 0 || len(ev) > 5 {
		t.Errorf("logs limit 5: %d events", len(ev))
	}
	sc, _ = ro.ok("screen", nil)
	if sc["width"] != 1920.0 || sc["allow_act"] != true {
		t.Errorf("screen: %v, want 1920 wide with acting allowed", sc)
	}
	sc, res := ro.ok("screenshot", nil)
	img := image(res)
	if img == nil || img.MIMEType != "image/jpeg" {
		t.Fatalf("screenshot content %s, want an image/jpeg block", mustJSON(t, res.Content))
	}
	dec, err := jpeg.Decode(bytes.NewReader(img.Data))
	if err != nil || dec.Bounds().Dx() != 1024 || dec.Bounds().Dy() != 576 {
		t.Errorf("screenshot image: %v %v, want a 1024x576 JPEG (1920x1080 scaled for a model)", err, dec.Bounds())
	}
	if s, _ := sc["scale"].(float64); s < 0.533 || s > 0.534 || sc["width"] != 1024.0 || sc["image"] != nil {
		t.Errorf("screenshot structured %v, want scale 0.533, width 1024 and no image bytes", sc)
	}

	// Every acting tool is refused, as an answer that says how to enable it.
	acts := map[string]map[string]any{
		"spawn":       {"name": "s2", "argv": []string{"sh"}},
		"ask":         {"name": "s1", "text": "echo hi"},
		"send":        {"name": "s1", "keys": []string{"enter"}},
		"stop":        {"name": "s1"},
		"resize":      {"name": "s1", "cols": 100, "rows": 30},
		"restart":     {"name": "s1", "force": true},
		"rm":          {"name": "s1", "force": true},
		"push":        {"session": "s1", "message": "hi"},
		"act":         {"actions": []map[string]any{{"kind": "move", "x": 10, "y": 10}}},
		"desktop_new": {"name": "d1"},
		"desktop_rm":  {"name": "d1"},
	}
	for _, name := range actTools {
		ro.refused(name, acts[name], "disabled", "--yes", "agentctl mcp --yes")
	}
	sc, _ = ro.ok("status", map[string]any{"name": "s1"})
	if sc["status"] != "running" {
		t.Errorf("after refused stop, s1 is %v", sc["status"])
	}

	// With --yes they act.
	rw := h.startMCP(t, true)
	tools, _ = rw.cs.ListTools(rw.ctx, nil)
	for _, tl := range tools.Tools {
		if strings.Contains(tl.Description, "DISABLED") {
			t.Errorf("--yes server: %s still says disabled", tl.Name)
		}
	}
	rw.ok("spawn", map[string]any{"name": "s2", "argv": []string{"sh"}, "cols": 80, "rows": 24})
	sc, res = rw.ok("ask", map[string]any{"name": "s2", "text": "echo hi-$((1+2))", "until": "hi-3", "timeout_ms": 20000})
	if !strings.Contains(text(res), "hi-3") {
		t.Errorf("ask answered %q (%v), want hi-3", text(res), sc)
	}
	rw.ok("send", map[string]any{"name": "s2", "text": "echo sent-$((2+3))\n"})
	await(t, 10*time.Second, "the sent line on s2's screen", func() bool {
		_, res := rw.ok("snapshot", map[string]any{"name": "s2"})
		return strings.Contains(text(res), "sent-5")
	})

	// act's coordinates are the last screenshot's: none yet on this server.
	rw.refused("act", map[string]any{"actions": []map[string]any{{"kind": "move", "x": 10, "y": 10}}}, "invalid_arguments", "take a screenshot first")
	rw.ok("screenshot", nil)
	sc, _ = rw.ok("act", map[string]any{"actions": []map[string]any{{"kind": "move", "x": 512, "y": 288}}})
	if x, y := pointer(t, srv); x != 960 || y != 540 {
		t.Errorf("move to 512,288 of the 1024x576 image put the pointer at %d,%d, want 960,540 (%v)", x, y, sc)
	}
	// The pointer is reported in the image's pixels, where act takes it.
	sc, _ = rw.ok("screenshot", nil)
	if p, _ := sc["pointer_in_image"].(map[string]any); p["x"] != 512.0 || p["y"] != 288.0 {
		t.Errorf("screenshot's pointer_in_image %v, want 512,288 (the screen's 960,540 in the 1024x576 image)", sc["pointer_in_image"])
	}
	sc, _ = rw.ok("cursor_position", nil)
	if p, _ := sc["image"].(map[string]any); p["x"] != 512.0 || p["y"] != 288.0 || sc["image_width"] != 1024.0 {
		t.Errorf("cursor_position %v, want 512,288 in the 1024x576 image", sc)
	}
	rw.ok("act", map[string]any{"actions": []map[string]any{{"kind": "move", "x": 1023, "y": 575}}, "observe": false})
	if x, y := pointer(t, srv); x != 1919 || y != 1079 {
		t.Errorf("move to the image's last pixel put the pointer at %d,%d, want 1919,1079", x, y)
	}
	rw.refused("act", map[string]any{"actions": []map[string]any{{"kind": "click", "x": 1024, "y": 10}}}, "invalid_arguments", "1024x576", "action 1")
	// A screenshot of a region: coordinates follow it.
	sc, _ = rw.ok("screenshot", map[string]any{"region": map[string]any{"x": 100, "y": 200, "width": 400, "height": 300}, "format": "png"})
	if sc["scale"] != 1.0 || sc["format"] != "png" {
		t.Errorf("region screenshot %v, want png at scale 1", sc)
	}
	rw.ok("act", map[string]any{"actions": []map[string]any{{"kind": "move", "x": 10, "y": 20}}, "observe": false})
	if x, y := pointer(t, srv); x != 110 || y != 220 {
		t.Errorf("move to 10,20 of the region put the pointer at %d,%d, want 110,220", x, y)
	}
	sc, _ = rw.ok("stop", map[string]any{"name": "s2"})
	if sc["status"] == "running" {
		t.Errorf("stop: %v", sc)
	}
	if strings.Contains(ro.stderr.String()+rw.stderr.String(), "panic") {
		t.Errorf("agentctl mcp panicked:\n%s\n%s", ro.stderr, rw.stderr)
	}
}

func TestMCPBadInput(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 1024, Height: 768})
	h := newHome(t)
	h.startDaemon([]string{"--allow-act", "--display", srv.Display})
	m := h.startMCP(t, true)

	// An unknown tool is a protocol error naming what exists.
	m.malformed("frobnicate", nil, `unknown tool "frobnicate"`, "list, status, snapshot")
	// Arguments that do not fit are tool errors naming the fix.
	m.badArgs("status", map[string]any{"name": "x", "bogus": 1}, `"bogus"`, "name (required)")
	m.badArgs("status", map[string]any{}, `needs the argument "name"`)
	m.badArgs("status", map[string]any{"name": 5}, "name must be a string")
	m.badArgs("spawn", map[string]any{"name": "x", "argv": "sh"}, "argv must be an array")
	m.badArgs("spawn", map[string]any{"name": "x", "argv": []string{"sh"}, "cols": "80"}, "cols must be an integer")
	m.badArgs("act", map[string]any{"actions": []map[string]any{{"kind": "move", "x": "10", "y": 1}}}, "must be a number")
	m.badArgs("act", map[string]any{"actions": []map[string]any{{"kind": "move", "wobble": 1}}}, `unknown field "wobble"`, "an action takes kind")
	m.badArgs("act", map[string]any{"observe": true}, `needs the argument "actions"`)
	m.badArgs("screenshot", map[string]any{"region": map[string]any{"x": 0, "y": 0, "w": 5, "h": 5}}, `unknown field`, "screenshot")
	// The schema's limits are the server's.
	m.badArgs("logs", map[string]any{"name": "x", "limit": 0}, "limit", "minimum")
	m.badArgs("spawn", map[string]any{"name": "x", "argv": []string{"sh"}, "cols": 0}, "cols", "minimum")
	m.badArgs("act", map[string]any{"actions": []any{}}, "actions", "1")
	m.badArgs("act", map[string]any{"actions": []map[string]any{{"kind": "scroll", "direction": "up", "amount": 50}}}, "amount", "maximum")
	// modifiers go with keys and pointer actions (see mcp_keys_test.go).
	m.badArgs("act", map[string]any{"actions": []map[string]any{{"kind": "move", "x": 1, "y": 1, "modifiers": []string{"ctrl"}}}}, "action 1 (move): modifiers apply to key, hold_key", "key_down")
	m.badArgs("act", map[string]any{"actions": []map[string]any{{"kind": "left_click_drag", "x": 1, "y": 1}}}, "to_x and to_y")
	m.badArgs("wait", map[string]any{"name": "x"}, "say what to wait for")
	m.badArgs("push", map[string]any{"message": "x"}, "session or channel_id")
	m.badArgs("zoom", map[string]any{"x": 0, "y": 0, "width": 10, "height": 10}, "take a screenshot first")
	many := make([]map[string]any, 25)
	for i := range many {
		many[i] = map[string]any{"kind": "wait", "ms": 1}
	}
	m.badArgs("act", map[string]any{"actions": many}, "24")
	// None of those reached agentd: its audit log, which records every
	// batch it is given (refused ones too), has none.
	audit := filepath.Join(h.state, "agentd", "audit.jsonl")
	if b, _ := os.ReadFile(audit); len(bytes.TrimSpace(b)) > 0 {
		t.Errorf("arguments the server refused reached agentd's act: %s", b)
	}

	// Well-formed calls the daemon refuses are tool errors too.
	m.refused("act", map[string]any{"actions": []map[string]any{{"kind": "type", "text": strings.Repeat("a", 1001)}}}, "invalid_params", "1000")
	if b, _ := os.ReadFile(audit); !strings.Contains(string(b), `"outcome":"invalid"`) {
		t.Errorf("agentd's audit log after a batch it refused: %q, want the refused batch (else the check above proves nothing)", b)
	}
	m.refused("screenshot", map[string]any{"region": map[string]any{"x": 5000, "y": 0, "width": 10, "height": 10}}, "invalid_params")
	m.refused("status", map[string]any{"name": "nobody"}, "agent_not_found", "nobody")
	m.refused("send", map[string]any{"name": "nobody", "text": "x"}, "agent_not_found")
}

func TestMCPLoopGuard(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 1024, Height: 768})
	h := newHome(t)
	h.startDaemon([]string{"--allow-act", "--display", srv.Display})
	m := h.startMCP(t, true)
	m.ok("screenshot", nil)
	// The pointer is not in screenshots: moving it changes nothing seen.
	same := map[string]any{"actions": []map[string]any{{"kind": "move", "x": 50, "y": 60}}}
	for i := 0; i < 3; i++ {
		m.ok("act", same)
	}
	m.refused("act", same, "refused", "loop guard", "look again", "fourth batch in a row", "after the last 3")
	m.refused("act", same, "refused", "loop guard", "fifth batch in a row", "after the last 3")
	// Other actions run, and reset the count.
	m.ok("act", map[string]any{"actions": []map[string]any{{"kind": "move", "x": 51, "y": 60}}})
	for i := 0; i < 3; i++ {
		m.ok("act", same)
	}
	m.refused("act", same, "refused", "loop guard")
	// A change on the screen resets it too.
	xt := srv.Command("xsetroot", "-solid", "#205080")
	if err := xt.Run(); err != nil {
		t.Skipf("xsetroot: %v", err)
	}
	sc, res := m.ok("act", same)
	if image(res) == nil {
		t.Errorf("act after the screen changed: %v without a new image", sc)
	}
}

func TestMCPConsentSaysWhichIsMissing(t *testing.T) {
	t.Parallel()
	srv := xvfbtest.Start(t, xvfbtest.Options{Width: 800, Height: 600})
	h := newHome(t)
	h.startDaemon([]string{"--display", srv.Display}) // no --allow-act
	act := map[string]any{"actions": []map[string]any{{"kind": "key", "key": "a"}}, "observe": false}
	h.startMCP(t, true).refused("act", act, "refused", "this server allows acting (--yes), but agentd does not", "--allow-act")
	h.startMCP(t, false).refused("act", act, "disabled", "--yes", "agentd does not allow acting on the screen either", "--allow-act")
}

func TestMCPWithoutDaemon(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	m := h.startMCP(t, false)
	await(t, 10*time.Second, "the startup warning on stderr", func() bool {
		return strings.Contains(m.stderr.String(), "cannot reach agentd")
	})
	for _, name := range []string{"list", "screen"} {
		m.refused(name, nil, "unreachable", "is agentd running?", "systemctl --user start agentd.socket")
	}
	// Acting tools say they are disabled, and that agentd is down too.
	m.refused("stop", map[string]any{"name": "x"}, "disabled", "is agentd running?")
	m.refused("act", map[string]any{"actions": []map[string]any{{"kind": "key", "key": "a"}}}, "disabled", "is agentd running?")
	h.startDaemon(nil)
	m.ok("list", nil)
}

// --max-output cuts a result's text and its structured strings, and says
// so in both.
func TestMCPMaxOutput(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "s1", "--", "sh")
	h.ctl(0, "send", "s1", "seq -w 1 2000 | tr '\\n' ' '; echo; echo the-end\n")
	m := h.startMCP(t, true, "--max-output", "1500")
	await(t, 10*time.Second, "the output on s1's screen", func() bool {
		out, _, _ := h.agentctl("", "snapshot", "s1")
		return strings.Contains(out, "1999 2000") // in the output, not the command line
	})
	sc, res := m.ok("snapshot", map[string]any{"name": "s1"})
	if !strings.Contains(text(res), "[cut by --max-output: 1500 of") || len(text(res)) > 1600 {
		t.Errorf("snapshot text %q, want at most 1500 bytes and the cut said", text(res))
	}
	if cut, _ := sc["truncated"].(string); !strings.Contains(cut, "--max-output 1500") || !strings.Contains(cut, "lines dropped from the top") {
		t.Errorf("snapshot structured content %v, want truncated saying the cap", sc)
	}
	if n := len(mustJSON(t, sc)); n > 1800 {
		t.Errorf("structured content is %d bytes with --max-output 1500", n)
	}
	if lines := mustJSON(t, sc["lines"]); !strings.Contains(string(lines), "the-end") {
		t.Errorf("the cut snapshot lost its last lines: %s", lines)
	}
	// Under the cap nothing is cut.
	sc, _ = m.ok("status", map[string]any{"name": "s1"})
	if _, cut := sc["truncated"]; cut {
		t.Errorf("status %v: cut, want it whole", sc)
	}
	out, errOut, code := h.agentctl("", "mcp", "--max-output", "-1")
	if code != 2 || !strings.Contains(errOut, "--max-output") {
		t.Errorf("agentctl mcp --max-output -1: exit %d, %q %q; want a usage error naming it", code, out, errOut)
	}
}
