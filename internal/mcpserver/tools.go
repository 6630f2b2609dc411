package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/pkg/wire"
)

// Config is what one `agentctl mcp` runs with.
type Config struct {
	Socket string // agentd's socket
	// Yes enables the acting tools (spawn, ask, send, stop, act). It comes
	// from the command line in the user's MCP config, where a model cannot
	// reach.
	Yes    bool
	Stdin  io.Reader
	Stdout io.Writer // the MCP protocol only
	Stderr io.Writer // diagnostics
}

// Defaults the tools apply where the daemon's own would not suit a model.
const (
	// logsDefaultLimit keeps a logs call within a model's context: the
	// daemon's default (10000 events) would flood it.
	logsDefaultLimit = 100
	// screenshotQuality is the JPEG quality of model screenshots: text stays
	// readable, and the image is a tenth of a PNG of a busy screen.
	screenshotQuality = 80
)

// tools is one running `agentctl mcp`.
type tools struct {
	cfg Config

	mu     sync.Mutex
	client *wire.Client // the connection to agentd; nil until dialled or after it ended

	// smu guards what the model last saw: act converts coordinates from the
	// last image's space and observes with the same shot, and the loop
	// guard compares observations with it.
	smu       sync.Mutex
	seen      *space
	shot      wire.ScreenshotParams // how the last image was taken
	imageHash [32]byte              // of the last image's bytes
	guard     loopGuard
}

// Run serves the tools server on cfg's stdin and stdout until the MCP
// client goes away (stdin closes) or ctx ends. A daemon that cannot be
// reached is said on stderr now and in every result until it can.
func Run(ctx context.Context, cfg Config) error {
	t := &tools{cfg: cfg}
	defer t.close()
	if c, err := t.conn(ctx); err != nil {
		fmt.Fprintf(cfg.Stderr, "agentctl mcp: %v; the tools will answer with this until agentd runs\n", err)
	} else if h, err := c.Hello(ctx, wire.HelloParams{Client: "agentctl mcp " + buildinfo.Version}); err == nil {
		mode := "read-only (start with --yes to enable spawn, ask, send, stop and act)"
		if cfg.Yes {
			mode = "acting tools enabled (--yes)"
		}
		fmt.Fprintf(cfg.Stderr, "agentctl mcp: serving agentd %s at %s; %s\n", h.Version, cfg.Socket, mode)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentd", Title: "agentd: agent sessions and the X11 screen", Version: buildinfo.Version},
		&mcp.ServerOptions{Instructions: instructions(cfg.Yes)})
	addTools(srv, t.list())
	ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(cfg.Stdin), Writer: nopWriteCloser{cfg.Stdout}}, nil)
	if err != nil {
		return fmt.Errorf("start the MCP server: %w", err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-waitErr
	case <-waitErr:
	}
	return nil
}

// instructions tell the model how the tools fit together.
func instructions(yes bool) string {
	s := "agentd runs agent sessions (programs in terminals: shells, REPLs, coding agents) and drives this computer's X11 screen. " +
		"Look before you act: list, status, snapshot and logs read sessions; screenshot and screen read the display. " +
		"act's coordinates are pixels of the last screenshot this server returned to you."
	if !yes {
		s += " This server was started read-only: spawn, ask, send, stop and act refuse until the user adds --yes to its command (agentctl mcp --yes)."
	}
	return s
}

func (t *tools) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.client != nil {
		t.client.Close()
		t.client = nil
	}
}

// conn returns the connection to agentd, dialling when there is none or
// the last one ended (agentd restarted).
func (t *tools) conn(ctx context.Context) (*wire.Client, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.client != nil {
		select {
		case <-t.client.Done():
			t.client = nil
		default:
			return t.client, nil
		}
	}
	c, err := wire.Dial(ctx, t.cfg.Socket, wire.ClientOptions{})
	if err != nil {
		return nil, err
	}
	t.client = c
	return c, nil
}

// call runs f with the connection, turning every error into a refusal.
func call[R any](ctx context.Context, t *tools, f func(c *wire.Client) (R, error), text func(R) string) *mcp.CallToolResult {
	c, err := t.conn(ctx)
	if err != nil {
		return failure(err)
	}
	r, err := f(c)
	if err != nil {
		return failure(err)
	}
	msg := ""
	if text != nil {
		msg = text(r)
	}
	return answer(r, msg)
}

// disabledNote is appended to an acting tool's description without --yes.
const disabledNote = " DISABLED on this server: it was started without --yes, so this tool refuses every call with ok false. " +
	"If the user wants you to act, tell them to add --yes to this server's command in their MCP config (agentctl mcp --yes) " +
	"and restart it; you cannot enable it yourself."

// disabledReason is the refusal of an acting tool without --yes.
const disabledReason = "this MCP server was started without --yes, so it only looks: %s is disabled. " +
	"Ask the user to add --yes to its command in the MCP config (agentctl mcp --yes) and restart the MCP server if they want you to act; you cannot enable it yourself"

// Schema pieces shared by several tools.
var (
	nameArg = arg{"name", map[string]any{"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,62}$",
		"description": "the session's name, as list shows it: lower-case letters, digits, '.', '_' and '-', at most 63 characters"}, true}
	regionSchema = map[string]any{"type": "object", "additionalProperties": false,
		"required": []string{"x", "y", "width", "height"},
		"properties": map[string]any{
			"x": map[string]any{"type": "integer", "minimum": 0}, "y": map[string]any{"type": "integer", "minimum": 0},
			"width": map[string]any{"type": "integer", "minimum": 1}, "height": map[string]any{"type": "integer", "minimum": 1}},
		"description": "a part of the screen, in physical screen pixels (see screen for the size); the whole screen when omitted"}
	actionFields = "an action takes kind (click, move, down, up, type, key, scroll, wait, focus), x, y, button, double, text, key, modifiers, direction, amount, ms, application, uri"
)

// The tools' inputs.
type (
	listIn struct {
		Status []string `json:"status"`
	}
	nameIn struct {
		Name string `json:"name"`
	}
	logsIn struct {
		Name    string `json:"name"`
		FromSeq uint64 `json:"from_seq"`
		Since   string `json:"since"`
		Tail    int    `json:"tail"`
		Limit   int    `json:"limit"`
		Plain   bool   `json:"plain"`
	}
	screenshotIn struct {
		Region  *wire.Region `json:"region"`
		Monitor *int         `json:"monitor"`
		Format  string       `json:"format"`
	}
	noIn    struct{}
	spawnIn wire.SpawnParams
	askIn   wire.AskParams
	sendIn  wire.SendParams
	stopIn  wire.StopParams
	actIn   struct {
		Actions  []wire.Action `json:"actions"`
		Observe  *bool         `json:"observe"`
		SettleMS *float64      `json:"settle_ms"`
	}
)

// list is the tools in the order a model should reach for them: look, then act.
func (t *tools) list() []tool {
	acting := func(desc string) string {
		if t.cfg.Yes {
			return desc
		}
		return desc + disabledNote
	}
	return []tool{
		typedTool(tool{name: "list", readOnly: true,
			desc: "List agentd's sessions (programs running in terminals: shells, REPLs, coding agents) with their status, pid, command, age and how they ended. Start here.",
			args: []arg{{"status", map[string]any{"type": "array", "items": map[string]any{"type": "string",
				"enum": statusNames()},
				"description": "only sessions in these statuses; all when omitted"}, false}},
		}, func(ctx context.Context, in listIn) *mcp.CallToolResult {
			return call(ctx, t, func(c *wire.Client) (*wire.ListResult, error) {
				p := wire.ListParams{}
				for _, st := range in.Status {
					p.Status = append(p.Status, wire.Status(st))
				}
				return c.List(ctx, p)
			},
				func(r *wire.ListResult) string {
					if len(r.Sessions) == 0 {
						return "no sessions"
					}
					var rows []string
					for _, s := range r.Sessions {
						rows = append(rows, fmt.Sprintf("%s (%s): %s", s.Name, s.Status, strings.Join(s.Command, " ")))
					}
					return fmt.Sprintf("%d sessions:\n%s", len(r.Sessions), strings.Join(rows, "\n"))
				})
		}),
		typedTool(tool{name: "status", readOnly: true,
			desc: "Everything about one session: status, what it allows now (ask, send, stop, ...), pids, terminal size, bytes recorded, asks answered, how it ended.",
			args: []arg{nameArg},
		}, func(ctx context.Context, in nameIn) *mcp.CallToolResult {
			return call(ctx, t, func(c *wire.Client) (*wire.SessionStatus, error) { return c.Status(ctx, in.Name) }, nil)
		}),
		typedTool(tool{name: "snapshot", readOnly: true,
			desc: "The session's terminal screen as a person sees it now: its text lines, cursor position and size. The text is the answer's text content.",
			args: []arg{nameArg},
		}, func(ctx context.Context, in nameIn) *mcp.CallToolResult {
			return call(ctx, t, func(c *wire.Client) (*wire.SnapshotResult, error) { return c.Snapshot(ctx, in.Name) },
				func(r *wire.SnapshotResult) string {
					return fmt.Sprintf("%s, %dx%d, cursor at column %d row %d:\n%s", r.Name, r.Cols, r.Rows, r.CursorX, r.CursorY,
						strings.TrimRight(strings.Join(r.Lines, "\n"), "\n "))
				})
		}),
		typedTool(tool{name: "logs", readOnly: true,
			desc: fmt.Sprintf("A session's event log from from_seq: output, input, asks, answers, resizes, signals, exit. At most limit events (default %d, at most 10000); "+
				"continue with from_seq set to the answer's next_seq while more is true. plain gives output as the text a person saw (escape sequences applied).", logsDefaultLimit),
			args: []arg{nameArg,
				{"from_seq", map[string]any{"type": "integer", "minimum": 0, "description": "the first event's sequence number; 0 (default) is the oldest kept"}, false},
				{"since", map[string]any{"type": "string", "description": "start at a seq (\"120\"), a duration ago (\"5m\") or a time (\"2026-11-30T20:00:00Z\")"}, false},
				{"tail", map[string]any{"type": "integer", "minimum": 0, "description": "start at the last this many events"}, false},
				{"plain", map[string]any{"type": "boolean", "description": "output as plain text lines, as a person saw it"}, false},
				{"limit", map[string]any{"type": "integer", "minimum": 1, "maximum": 10000, "description": fmt.Sprintf("at most this many events (default %d)", logsDefaultLimit)}, false}},
		}, func(ctx context.Context, in logsIn) *mcp.CallToolResult {
			if in.Limit == 0 {
				in.Limit = logsDefaultLimit
			}
			return call(ctx, t, func(c *wire.Client) (*wire.LogsResult, error) {
				return c.Logs(ctx, wire.LogsParams{Name: in.Name, FromSeq: in.FromSeq, Since: in.Since, Tail: in.Tail, Limit: in.Limit, Plain: in.Plain})
			}, nil)
		}),
		typedTool(tool{name: "screenshot", readOnly: true,
			desc: fmt.Sprintf("Take a screenshot of the X11 screen, returned as an image scaled to fit %dx%d (XGA; a whole 1920x1080 screen comes back as 1024x576). "+
				"The result's scale is image pixels per screen pixel and area is the part of the screen shown. "+
				"act takes coordinates in the pixels of the last image this tool (or act) returned, so take one before acting.", modelMaxWidth, modelMaxHeight),
			args: []arg{{"region", regionSchema, false},
				{"monitor", map[string]any{"type": "integer", "minimum": 0, "description": "only this monitor (its index in screen's monitors); ignored with region"}, false},
				{"format", map[string]any{"type": "string", "enum": []string{"jpeg", "png"}, "description": "jpeg (default, quality 80) or png (lossless, larger)"}, false}},
		}, t.screenshot),
		typedTool(tool{name: "screen", readOnly: true,
			desc: "Describe the display: size, monitors, keyboard layout, whether agentd allows acting on it, the kill switch, and which caller holds it now.",
		}, func(ctx context.Context, _ noIn) *mcp.CallToolResult {
			return call(ctx, t, func(c *wire.Client) (*wire.ScreenResult, error) { return c.Screen(ctx) }, nil)
		}),

		typedTool(tool{name: "spawn",
			desc: acting("Start a program in a new session: a named pseudo-terminal that agentd keeps running and records. Answers the session's status."),
			args: []arg{nameArg,
				{"argv", map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"type": "string"},
					"description": "the program and its arguments, e.g. [\"bash\"] or [\"python3\", \"-q\"]; no shell is involved"}, true},
				{"cwd", map[string]any{"type": "string", "description": "working directory, absolute; the user's home when omitted"}, false},
				{"env", map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}, "description": "variables added to the program's environment"}, false},
				{"cols", map[string]any{"type": "integer", "minimum": 1, "description": "terminal columns (default 120)"}, false},
				{"rows", map[string]any{"type": "integer", "minimum": 1, "description": "terminal rows (default 40)"}, false}},
		}, func(ctx context.Context, in spawnIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "spawn"); r != nil {
				return r
			}
			return call(ctx, t, func(c *wire.Client) (*wire.SessionStatus, error) { return c.Spawn(ctx, wire.SpawnParams(in)) }, nil)
		}),
		typedTool(tool{name: "ask",
			desc: acting("Type a question into a running session (waiting for its prompt, pressing Enter) and answer what the program printed in reply, " +
				"read from its screen until the prompt is back and quiet. The answer is the text content. Text at most 64 KiB; by default it waits up to 10 minutes."),
			args: []arg{nameArg,
				{"text", map[string]any{"type": "string", "description": "the question or command, without a trailing newline; at most 64 KiB"}, true},
				{"timeout_ms", map[string]any{"type": "integer", "minimum": 1, "description": "give up after this many milliseconds (default 600000); the refusal then carries what was seen"}, false},
				{"idle_ms", map[string]any{"type": "integer", "minimum": 1, "description": "end once the program has been quiet this many milliseconds after it started answering"}, false},
				{"until", map[string]any{"type": "string", "description": "end when this regular expression (RE2) matches the new output or the screen"}, false},
				{"lock_timeout_ms", map[string]any{"type": "integer", "minimum": 1, "description": "wait this long for another ask on the same session"}, false},
				{"via", map[string]any{"type": "string", "enum": []string{"auto", "pty", "channel"}, "description": "auto (default): the session's channel when one is bound, else the terminal"}, false}},
		}, func(ctx context.Context, in askIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "ask"); r != nil {
				return r
			}
			return call(ctx, t, func(c *wire.Client) (*wire.AskResult, error) { return c.Ask(ctx, wire.AskParams(in)) },
				func(r *wire.AskResult) string { return r.Answer })
		}),
		typedTool(tool{name: "send",
			desc: acting("Send input to a running session without waiting for an answer: text exactly as typed (\\n is Enter), or keys by name. Give text, keys, or both (the text first, in one write). " +
				"Key names: enter, esc, tab, up, down, left, right, home, end, pageup, pagedown, backspace, delete, space, ctrl+<letter>, alt+<key>, f1 to f12."),
			args: []arg{nameArg,
				{"text", map[string]any{"type": "string", "description": "text to type, at most 64 KiB; \\n is Enter"}, false},
				{"keys", map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"type": "string"}, "description": "key names pressed in order, e.g. [\"ctrl+c\"] or [\"up\", \"enter\"]"}, false}},
		}, func(ctx context.Context, in sendIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "send"); r != nil {
				return r
			}
			return call(ctx, t, func(c *wire.Client) (map[string]any, error) {
				return map[string]any{"name": in.Name, "sent": true}, c.Send(ctx, wire.SendParams(in))
			}, func(map[string]any) string { return "sent to " + in.Name })
		}),
		typedTool(tool{name: "stop",
			desc: acting("End a session's program: a signal (default TERM) to its process group, then KILL after grace_ms (default 5000). Answers how it ended. The session's record stays."),
			args: []arg{nameArg,
				{"signal", map[string]any{"type": "string", "enum": []string{"TERM", "INT", "HUP", "QUIT", "KILL"}, "description": "the first signal (default TERM)"}, false},
				{"grace_ms", map[string]any{"type": "integer", "minimum": 0, "description": "milliseconds before KILL follows (default 5000)"}, false}},
		}, func(ctx context.Context, in stopIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "stop"); r != nil {
				return r
			}
			return call(ctx, t, func(c *wire.Client) (*wire.ExitResult, error) { return c.Stop(ctx, wire.StopParams(in)) }, nil)
		}),
		typedTool(tool{name: "act", nested: actionFields,
			desc: acting(fmt.Sprintf("Perform a batch of input on the X11 screen, in order, then return a screenshot of the result (like screenshot's). "+
				"x and y are pixels of the LAST SCREENSHOT THIS SERVER RETURNED (not the physical screen); the server converts them with that image's scale, "+
				"and a point outside that image is refused. Take a screenshot first. At most %d actions (a double click counts as two) and %d typed characters per batch; "+
				"one batch at a time for the whole desktop. Kinds: click {x, y, button left|right|middle, double}, move {x, y}, down/up {button, optional x, y}, "+
				"type {text: any Unicode, \\n is Enter}, key {key: e.g. enter, esc, tab, ctrl+s, ctrl+shift+t, alt+f4, f5, a}, "+
				"scroll {direction up|down|left|right, amount 1-20 (default 3), optional x, y}, wait {ms up to 5000, default 350}, focus {application: a window's name or title}. "+
				"If the screen does not change after the same batch three times in a row, the fourth is refused: look again or change approach. "+
				"The user can stop a batch by pushing the pointer into a screen corner.", wire.MaxActions, wire.MaxTypedChars)),
			args: []arg{
				{"actions", map[string]any{"type": "array", "minItems": 1, "maxItems": wire.MaxActions, "items": actionSchema(),
					"description": "the actions, run in order"}, true},
				{"observe", map[string]any{"type": "boolean", "description": "return a screenshot after the batch (default true)"}, false},
				{"settle_ms", map[string]any{"type": "number", "minimum": 0, "maximum": 5000, "description": "milliseconds to wait before that screenshot (default 300)"}, false}},
		}, t.act),
	}
}

// actionSchema is the schema of one act action.
func actionSchema() map[string]any {
	num := func(desc string) map[string]any { return map[string]any{"type": "number", "description": desc} }
	return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"kind"},
		"properties": map[string]any{
			"kind":        map[string]any{"type": "string", "enum": []string{"click", "move", "down", "up", "type", "key", "scroll", "wait", "focus"}},
			"x":           num("pixels from the left of the last screenshot"),
			"y":           num("pixels from the top of the last screenshot"),
			"button":      map[string]any{"type": "string", "enum": []string{"left", "right", "middle"}, "description": "default left"},
			"double":      map[string]any{"type": "boolean", "description": "click: a double click (counts as two actions)"},
			"text":        map[string]any{"type": "string", "description": "type: the text; \\n is Enter, \\t is Tab"},
			"key":         map[string]any{"type": "string", "description": "key: a name such as enter, esc, tab, backspace, delete, space, up, pageup, f5, a single character, or a chord such as ctrl+shift+t"},
			"modifiers":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "key: held modifiers, e.g. [\"ctrl\"]"},
			"direction":   map[string]any{"type": "string", "enum": []string{"up", "down", "left", "right"}},
			"amount":      num("scroll: steps, 1 to 20 (default 3)"),
			"ms":          num("wait: milliseconds, at most 5000 (default 350)"),
			"application": map[string]any{"type": "string", "description": "focus: the window's application name or title"},
			"uri":         map[string]any{"type": "string", "description": "focus: optional document or URL the window shows"},
		}}
}

// gate refuses an acting tool on a server started without --yes.
func (t *tools) gate(ctx context.Context, name string) *mcp.CallToolResult {
	if t.cfg.Yes {
		return nil
	}
	return refusal(codeDisabled, fmt.Sprintf(disabledReason, name)+t.daemonDown(ctx), false, nil)
}

// daemonDown is a note for a refusal that did not need agentd, saying that
// agentd cannot be reached either, so every result tells the model.
func (t *tools) daemonDown(ctx context.Context) string {
	if _, err := t.conn(ctx); err != nil {
		return ". Also: " + err.Error()
	}
	return ""
}

// modelShot completes screenshot params for a model: JPEG unless PNG is
// asked for, scaled into the model box.
func (t *tools) modelShot(ctx context.Context, c *wire.Client, in screenshotIn) (wire.ScreenshotParams, error) {
	p := wire.ScreenshotParams{Format: "jpeg", Region: in.Region, Monitor: in.Monitor}
	if in.Format == "png" {
		p.Format = "png"
	} else if in.Format != "" && in.Format != "jpeg" {
		return p, wire.Errorf(wire.CodeInvalidParams, "format %q is not jpeg or png", in.Format)
	}
	if p.Format == "jpeg" {
		q := screenshotQuality
		p.Quality = &q
	}
	w, h := 0, 0
	if r := in.Region; r != nil {
		w, h = r.Width, r.Height
	} else {
		// The area's size decides the scale: ask the display for it.
		scr, err := c.Screen(ctx)
		if err != nil {
			return p, err
		}
		w, h = scr.Width, scr.Height
		if in.Monitor != nil {
			for _, m := range scr.Monitors {
				if m.Index == *in.Monitor {
					w, h = m.Width, m.Height
				}
			}
		}
	}
	if mw := fitScale(w, h); mw > 0 {
		p.MaxWidth = &mw
	}
	return p, nil
}

// shotResult is a screenshot's structured content: the daemon's result
// without the image bytes, which travel as the image block.
func shotResult(s *wire.ScreenshotResult) wire.ScreenshotResult {
	r := *s
	r.Image = nil
	return r
}

// imageOf is the image block of a screenshot.
func imageOf(s *wire.ScreenshotResult) *mcp.ImageContent {
	return &mcp.ImageContent{Data: s.Image, MIMEType: "image/" + s.Format}
}

// remember makes s the image the model last saw.
func (t *tools) remember(s *wire.ScreenshotResult, p wire.ScreenshotParams) (changed bool) {
	sum := sha256.Sum256(s.Image)
	t.smu.Lock()
	defer t.smu.Unlock()
	sp := spaceOf(s)
	changed = t.seen == nil || sum != t.imageHash || *t.seen != sp
	t.seen, t.shot, t.imageHash = &sp, p, sum
	return changed
}

func (t *tools) screenshot(ctx context.Context, in screenshotIn) *mcp.CallToolResult {
	c, err := t.conn(ctx)
	if err != nil {
		return failure(err)
	}
	p, err := t.modelShot(ctx, c, in)
	if err != nil {
		return failure(err)
	}
	s, err := c.Screenshot(ctx, p)
	if err != nil {
		return failure(err)
	}
	if t.remember(s, p) {
		t.smu.Lock()
		t.guard.reset()
		t.smu.Unlock()
	}
	return answer(shotResult(s), shotText(s), imageOf(s))
}

// shotText tells the model which space the image is in.
func shotText(s *wire.ScreenshotResult) string {
	return fmt.Sprintf("%dx%d %s of screen area %d,%d %dx%d (scale %.4g image pixels per screen pixel); pointer at screen %d,%d; active window %q. "+
		"act's x and y are pixels of this image.", s.Width, s.Height, s.Format, s.Area.X, s.Area.Y, s.Area.Width, s.Area.Height, s.Scale,
		s.Pointer.X, s.Pointer.Y, s.ActiveWindow)
}

// actResult is act's structured content.
type actResult struct {
	wire.ActResult
	Observation *wire.ScreenshotResult `json:"observation,omitempty"`
}

func (t *tools) act(ctx context.Context, in actIn) *mcp.CallToolResult {
	if !t.cfg.Yes {
		reason := fmt.Sprintf(disabledReason, "act")
		// Say whether the daemon's consent is missing too, so the user
		// fixes both at once.
		if c, err := t.conn(ctx); err != nil {
			reason += ". Also: " + err.Error()
		} else if scr, err := c.Screen(ctx); err == nil && !scr.AllowAct {
			reason += ". agentd does not allow acting on the screen either: it must also be started with --allow-act (or allow_act = true in its config.toml)"
		}
		return refusal(codeDisabled, reason, false, nil)
	}
	key, _ := json.Marshal(in)
	t.smu.Lock()
	seen, shot, lastHash := t.seen, t.shot, t.imageHash
	allowed := t.guard.allow(string(key))
	t.smu.Unlock()
	if !allowed && seen != nil {
		// The guard is about a screen that does not change: look once more
		// before refusing, since something else may have changed it.
		if c, err := t.conn(ctx); err == nil {
			if s, err := c.Screenshot(ctx, shot); err == nil && sha256.Sum256(s.Image) != lastHash {
				t.smu.Lock()
				t.guard.reset()
				t.smu.Unlock()
				allowed = true
			}
		}
	}
	if !allowed {
		return refusal(string(wire.CodeRefused), fmt.Sprintf("loop guard: this is the %s batch in a row with the same actions, and the screen did not change after the last %d. "+
			"Take a screenshot and look again, or change approach (other coordinates, a key instead of a click, another tool)", ordinal(loopGuardLimit+1), loopGuardLimit), false, nil)
	}
	p := wire.ActParams{Actions: in.Actions, Observe: in.Observe, SettleMS: in.SettleMS}
	hasPoint := false
	for _, a := range in.Actions {
		hasPoint = hasPoint || a.X != nil || a.Y != nil
	}
	if hasPoint {
		if seen == nil {
			return refusal(string(wire.CodeInvalidParams), "take a screenshot first: act's x and y are pixels of the last screenshot this server returned, and it has returned none yet", false, nil)
		}
		var err error
		if p.Actions, err = seen.toScreenActions(in.Actions); err != nil {
			return refusal(string(wire.CodeInvalidParams), err.Error(), false, nil)
		}
	}
	c, err := t.conn(ctx)
	if err != nil {
		return failure(err)
	}
	observe := in.Observe == nil || *in.Observe
	if observe {
		if seen == nil {
			if shot, err = t.modelShot(ctx, c, screenshotIn{}); err != nil {
				return failure(err)
			}
		}
		p.Screenshot = &shot
	}
	r, err := c.Act(ctx, p)
	if err != nil {
		res := failure(withoutImage(err))
		if errors.Is(err, wire.ErrRefused) {
			// The kill switch or the daemon's consent: say which.
			if scr, serr := c.Screen(ctx); serr == nil && !scr.AllowAct {
				b := res.StructuredContent.(refusalBody)
				b.Reason = "this server allows acting (--yes), but agentd does not: " + b.Reason
				return refusal(b.Code, b.Reason, b.Retryable, b.Details)
			}
		}
		return res
	}
	out := actResult{ActResult: *r}
	out.ActResult.Observation = nil
	text := fmt.Sprintf("%s: %d actions in %.0f ms", r.Outcome, r.ActionsRun, r.DurationMS)
	changed := false
	var extra []mcp.Content
	if o := r.Observation; o != nil {
		sr := shotResult(o)
		out.Observation = &sr
		if o.Unchanged {
			text += "; the screen looks exactly as after your previous batch (no new image)"
		} else {
			// Same pixels as the last image the model got (a screenshot
			// before the first batch): no need to send it again.
			if changed = t.remember(o, shot); changed {
				text += "; " + shotText(o)
				extra = append(extra, imageOf(o))
			} else {
				text += "; the screen looks exactly as in the last image you received (no new image)"
			}
		}
	}
	t.smu.Lock()
	t.guard.ran(string(key), changed)
	t.smu.Unlock()
	return answer(out, text, extra...)
}

// ordinal spells small ordinals for messages.
func ordinal(n int) string {
	if n >= 1 && n <= 5 {
		return []string{"first", "second", "third", "fourth", "fifth"}[n-1]
	}
	return fmt.Sprintf("%dth", n)
}

// withoutImage drops the image from a failed batch's details (an ActResult
// with what was seen): the reason is for the model to read, and an image's
// base64 in the structured content would only cost it tokens.
func withoutImage(err error) error {
	var we *wire.Error
	if !errors.As(err, &we) || len(we.Details) == 0 {
		return err
	}
	var ar wire.ActResult
	if json.Unmarshal(we.Details, &ar) != nil || ar.Observation == nil || ar.Observation.Image == nil {
		return err
	}
	ar.Observation.Image = nil
	return we.WithDetails(ar)
}

// statusNames is every session status, for the list tool's schema; from
// the contract, so a new status is offered at once.
func statusNames() []string {
	names := make([]string, len(wire.Statuses))
	for i, st := range wire.Statuses {
		names[i] = string(st)
	}
	return names
}
