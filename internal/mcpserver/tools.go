package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/pkg/wire"
)

// Config is what one `agentctl mcp` runs with.
type Config struct {
	Socket string // agentd's socket
	// Yes enables the acting tools (actingList). It comes
	// from the command line in the user's MCP config, where a model cannot
	// reach.
	Yes bool
	// MaxOutput caps each tool result's text at this many bytes (0: no
	// cap); the result says what was cut.
	MaxOutput int
	Stdin     io.Reader
	Stdout    io.Writer // the MCP protocol only
	Stderr    io.Writer // diagnostics

	// sdkOnly has the SDK serve every call (no fastTools), and onFast is
	// called for each call served past it: for tests that hold the two
	// paths to the same answers.
	sdkOnly bool
	onFast  func()
}

// fastTools are the tools whose calls the framing serves itself, past the
// SDK's request handling (see lineTransport.fast): act, which a model's
// loop sends most and which has no progress to report. Its answers are the
// SDK path's (TestFastPathAnswersAsTheSDK).
var fastTools = map[string]bool{"act": true}

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

	// lmu guards idle: connections for long calls (see long), none in use.
	lmu  sync.Mutex
	idle []*wire.Client

	// smu guards views: what the model last saw of each target.
	smu   sync.Mutex
	views map[string]*view
}

// view is what the model last saw of one target, the person's display
// ("") or a desktop (its name): act converts coordinates from the last
// image of its own target and observes with the same shot, and the loop
// guard compares observations with it. Each target has its own, so
// screenshots of one desktop do not move act's space on another, and
// batches on two desktops do not add up in one guard.
type view struct {
	seen      *space
	shot      wire.ScreenshotParams // how the last image was taken (its Desktop set)
	imageHash [32]byte              // of the last image's bytes
	guard     loopGuard
}

// viewOf is target's view, made on first use; smu must be held.
func (t *tools) viewOf(target string) *view {
	if t.views == nil {
		t.views = map[string]*view{}
	}
	v := t.views[target]
	if v == nil {
		v = &view{}
		t.views[target] = v
	}
	return v
}

// seenOf is the space of target's last image, or nil.
func (t *tools) seenOf(target string) *space {
	t.smu.Lock()
	defer t.smu.Unlock()
	return t.viewOf(target).seen
}

// forget drops a removed desktop's view: a new desktop of the same name
// starts with no image.
func (t *tools) forget(target string) {
	t.smu.Lock()
	delete(t.views, target)
	t.smu.Unlock()
}

// targetName names a target in messages.
func targetName(target string) string {
	if target == "" {
		return "the user's display"
	}
	return fmt.Sprintf("desktop %q", target)
}

// Run serves the tools server on cfg's stdin and stdout until the MCP
// client goes away (stdin closes) or ctx ends. A daemon that cannot be
// reached is said on stderr now and in every result until it can.
func Run(ctx context.Context, cfg Config) error {
	// Ends the state feed (resources.go) with the server.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := &tools{cfg: cfg}
	defer t.close()
	if c, err := t.conn(ctx); err != nil {
		fmt.Fprintf(cfg.Stderr, "agentctl mcp: %v; the tools will answer with this until agentd runs\n", err)
	} else if h, err := c.Hello(ctx, wire.HelloParams{Client: "agentctl mcp " + buildinfo.Version}); err == nil {
		mode := "read-only (start with --yes to enable " + actingList + ")"
		if cfg.Yes {
			mode = "acting tools enabled (--yes)"
		}
		fmt.Fprintf(cfg.Stderr, "agentctl mcp: serving agentd %s at %s; %s\n", h.Version, cfg.Socket, mode)
	}
	feed := &stateFeed{t: t, ctx: ctx, retry: time.Second}
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentd", Title: "agentd: agent sessions and the X11 screen", Version: buildinfo.Version},
		&mcp.ServerOptions{Instructions: instructions(cfg.Yes), SubscribeHandler: feed.subscribe, UnsubscribeHandler: feed.unsubscribe})
	feed.srv = srv
	served, err := addToolsServed(srv, t.list(), cfg.MaxOutput)
	if err != nil {
		return err
	}
	addSessionResources(srv, feed)
	tr := &lineTransport{r: cfg.Stdin, w: cfg.Stdout, fastCtx: ctx}
	if !cfg.sdkOnly {
		tr.fast = func(name string) fastHandler {
			h := served[name]
			if !fastTools[name] || h == nil {
				return nil
			}
			if cfg.onFast == nil {
				return h
			}
			return func(ctx context.Context, args json.RawMessage) *mcp.CallToolResult {
				cfg.onFast()
				return h(ctx, args)
			}
		}
	}
	ss, err := srv.Connect(ctx, tr, nil)
	if err != nil {
		return fmt.Errorf("start the MCP server: %w", err)
	}
	serve(ctx, ss)
	return nil
}

// serve waits until the MCP client goes away (stdin closed) or ctx ends,
// which closes the session.
func serve(ctx context.Context, ss *mcp.ServerSession) {
	waitErr := make(chan error, 1)
	go func() { waitErr <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-waitErr
	case <-waitErr:
	}
}

// actingList names the tools --yes enables.
const actingList = "spawn, ask, send, resize, stop, restart, rm, push, act, desktop_new and desktop_rm"

// instructions tell the model how the tools fit together.
func instructions(yes bool) string {
	s := "agentd runs agent sessions (programs in terminals: shells, REPLs, coding agents) and drives this computer's X11 screen. " +
		"Look before you act: list, status, snapshot and logs read sessions; screenshot and screen read the display. " +
		"act's coordinates are pixels of the last screenshot this server returned to you (zoom looks closer without changing them). " +
		"The screen tools act on the user's display unless given desktop, the name of an agent desktop (a private X display of your own: desktops lists them, desktop_new makes one); each target keeps its own last screenshot. " +
		"A refused call is a tool error whose text says why and what to change. " +
		"The sessions are also resources (agentd://sessions, agentd://sessions/NAME): subscribe to them to hear when an agent starts working, waits, or needs approval or attention."
	if !yes {
		s += " This server was started read-only: " + actingList + " refuse until the user adds --yes to its command (agentctl mcp --yes)."
	}
	return s
}

func (t *tools) close() {
	t.mu.Lock()
	if t.client != nil {
		t.client.Close()
		t.client = nil
	}
	t.mu.Unlock()
	t.lmu.Lock()
	for _, c := range t.idle {
		c.Close()
	}
	t.idle = nil
	t.lmu.Unlock()
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

// maxIdleLong bounds the connections kept for long calls between them.
const maxIdleLong = 4

// long runs f, a long call (ask, wait, act), on a connection no other call
// shares: when the client cancels the call, that connection is closed and
// agentd cancels what it asked (the session's log records canceled and its
// ask lock is free at once), where a call on the shared connection could
// only stop waiting. A connection whose call ended normally is kept for the
// next long call, so a model's act loop does not dial each batch (it would
// cost about a millisecond a batch) and keeps agentd's per-connection
// "unchanged" observations.
func long[R any](ctx context.Context, t *tools, f func(c *wire.Client) (R, error)) (R, error) {
	var zero R
	t.lmu.Lock()
	var c *wire.Client
	for len(t.idle) > 0 && c == nil {
		c, t.idle = t.idle[len(t.idle)-1], t.idle[:len(t.idle)-1]
		select {
		case <-c.Done():
			c = nil // agentd restarted or hung up
		default:
		}
	}
	t.lmu.Unlock()
	if c == nil {
		var err error
		if c, err = wire.Dial(ctx, t.cfg.Socket, wire.ClientOptions{}); err != nil {
			return zero, err
		}
	}
	r, err := f(c)
	if ctx.Err() != nil || errors.Is(err, wire.ErrClosed) {
		c.Close() // the cancel reaches agentd as the connection's end
		return r, err
	}
	t.lmu.Lock()
	if len(t.idle) < maxIdleLong {
		t.idle = append(t.idle, c)
		c = nil
	}
	t.lmu.Unlock()
	if c != nil {
		c.Close()
	}
	return r, err
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
const disabledNote = " DISABLED on this server: it was started without --yes, so this tool refuses every call (a tool error with code disabled). " +
	"If the user wants you to act, tell them to add --yes to this server's command in their MCP config (agentctl mcp --yes) " +
	"and restart it; you cannot enable it yourself."

// disabledReason is the refusal of an acting tool without --yes.
const disabledReason = "this MCP server was started without --yes, so it only looks: %s is disabled. " +
	"Ask the user to add --yes to its command in the MCP config (agentctl mcp --yes) and restart the MCP server if they want you to act; you cannot enable it yourself"

// desktopIs says what a desktop is, in every screen tool's description of
// its desktop argument.
const desktopIs = "A desktop is an X display of an agent's own (a private Xvfb with a window manager) that agentd runs: " +
	"the user does not see it, its pointer and keyboard are its own, and acting on it needs no consent per batch. " +
	"desktops lists them, desktop_new makes one, spawn with desktop starts a program on one."

// actionFields names an action's fields, for the message about an unknown one.
var actionFields = "an action takes kind (" + strings.Join(actionKinds, ", ") + "), x, y, to_x, to_y, button, double, text, key, modifiers, duration, direction, amount, ms, application, uri"

// The tools' structured results, where the contract has no type for them.
type (
	sentOut struct {
		Name string `json:"name"`
		Sent bool   `json:"sent"`
	}
	resizeOut struct {
		Name string `json:"name"`
		Cols int    `json:"cols"`
		Rows int    `json:"rows"`
	}
	// shotOut is a screenshot's structured content: the daemon's result
	// without the image bytes (they travel as the image block), with the
	// pointer in the image's pixels when it lies inside the image.
	shotOut struct {
		wire.ScreenshotResult
		PointerInImage *wire.Point `json:"pointer_in_image,omitempty"`
	}
	cursorOut struct {
		// Image is the pointer in the last screenshot's pixels (the space
		// act's x and y are in); absent when it lies outside that image or
		// no screenshot was taken yet.
		Image       *wire.Point `json:"image,omitempty"`
		ImageWidth  int         `json:"image_width,omitempty"`
		ImageHeight int         `json:"image_height,omitempty"`
		Screen      wire.Point  `json:"screen"`
	}
	desktopRmOut struct {
		Name    string `json:"name"`
		Removed bool   `json:"removed"`
	}
	// actOut is act's structured content.
	actOut struct {
		wire.ActResult
		Observation *shotOut `json:"observation,omitempty"`
	}
)

// typeOf names a result type for a tool's outputSchema.
func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// list is the tools in the order a model should reach for them: look, then act.
func (t *tools) list() []tool {
	acting := func(desc string) string {
		if t.cfg.Yes {
			return desc
		}
		return desc + disabledNote
	}
	return []tool{
		typedTool(tool{name: "list", readOnly: true, idempotent: true, out: typeOf[wire.ListResult](),
			desc: "List agentd's sessions (programs running in terminals: shells, REPLs, coding agents) with their status, pid, command, age and how they ended. Start here.",
		}, func(ctx context.Context, in listIn) *mcp.CallToolResult {
			return call(ctx, t, func(c *wire.Client) (*wire.ListResult, error) {
				return c.List(ctx, wire.ListParams(in))
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
		typedTool(tool{name: "status", readOnly: true, idempotent: true, out: typeOf[wire.SessionStatus](),
			desc: "Everything about one session: status, what it allows now (ask, send, stop, ...), pids, terminal size, bytes recorded, asks answered, how it ended.",
		}, func(ctx context.Context, in nameIn) *mcp.CallToolResult {
			return call(ctx, t, func(c *wire.Client) (*wire.SessionStatus, error) { return c.Status(ctx, in.Name) }, nil)
		}),
		typedTool(tool{name: "snapshot", readOnly: true, idempotent: true, out: typeOf[wire.SnapshotResult](),
			desc: "The session's terminal screen as a person sees it now: its text lines, cursor position and size. The text is the answer's text content.",
		}, func(ctx context.Context, in nameIn) *mcp.CallToolResult {
			return call(ctx, t, func(c *wire.Client) (*wire.SnapshotResult, error) { return c.Snapshot(ctx, in.Name) },
				func(r *wire.SnapshotResult) string {
					return fmt.Sprintf("%s, %dx%d, cursor at column %d row %d:\n%s", r.Name, r.Cols, r.Rows, r.CursorX, r.CursorY,
						strings.TrimRight(strings.Join(r.Lines, "\n"), "\n "))
				})
		}),
		typedTool(tool{name: "logs", readOnly: true, idempotent: true, out: typeOf[wire.LogsResult](),
			desc: fmt.Sprintf("A session's event log from from_seq: output, input, asks, answers, resizes, signals, exit. At most limit events (default %d, at most 10000); "+
				"continue with from_seq set to the answer's next_seq while more is true. plain gives output as the text a person saw (escape sequences applied).", logsDefaultLimit),
		}, func(ctx context.Context, in logsIn) *mcp.CallToolResult {
			if in.Limit == 0 {
				in.Limit = logsDefaultLimit
			}
			return call(ctx, t, func(c *wire.Client) (*wire.LogsResult, error) {
				return c.Logs(ctx, wire.LogsParams{Name: in.Name, FromSeq: in.FromSeq, Since: in.Since, Tail: in.Tail, Limit: in.Limit, Plain: in.Plain})
			}, nil)
		}),
		typedTool(tool{name: "wait", readOnly: true, out: typeOf[wire.WaitResult](),
			desc: "Wait until a session shows something, goes quiet, or exits, without typing anything: text (literal) or until (a regular expression, RE2) " +
				"on its screen or new output, idle_ms of quiet, or exit; the first to hold ends it. Answers why it ended and the screen. " +
				"Sends progress notifications (the screen's last lines) when the call has a progressToken; cancel it to stop waiting.",
		}, t.wait),
		typedTool(tool{name: "screenshot", readOnly: true, out: typeOf[shotOut](),
			desc: fmt.Sprintf("Take a screenshot of the X11 screen, returned as an image scaled to fit %dx%d (XGA; a whole 1920x1080 screen comes back as 1024x576). "+
				"The result's scale is image pixels per screen pixel and area is the part of the screen shown; pointer_in_image is the pointer in the image's pixels. "+
				"act takes coordinates in the pixels of the last image this tool (or act) returned, so take one before acting.", modelMaxWidth, modelMaxHeight),
		}, t.screenshot),
		typedTool(tool{name: "zoom", readOnly: true, out: typeOf[shotOut](),
			desc: "Look closer at part of the last screenshot: x, y, width and height are in that image's pixels, and the part comes back at up to the screen's own resolution " +
				"(scaled into the same box as screenshot). act's coordinates stay those of the last screenshot: zoom does not change them.",
		}, t.zoom),
		typedTool(tool{name: "cursor_position", readOnly: true, out: typeOf[cursorOut](),
			desc: "Where the mouse pointer is now: in the last screenshot's pixels (the space act's x and y are in) and in screen pixels. " +
				"With desktop, that desktop's own pointer and its last screenshot.",
		}, t.cursorPosition),
		typedTool(tool{name: "screen", readOnly: true, idempotent: true, out: typeOf[wire.ScreenResult](),
			desc: "Describe the display: size, monitors, keyboard layout, whether agentd allows acting on it, the kill switch, and which caller holds it now. " +
				"With desktop, that desktop's.",
		}, func(ctx context.Context, in targetIn) *mcp.CallToolResult {
			return deskCall(ctx, t, in.Desktop, func(c *wire.Client) (*wire.ScreenResult, error) {
				return c.ScreenOf(ctx, wire.ScreenParams{Desktop: in.Desktop})
			}, nil)
		}),
		typedTool(tool{name: "desktops", readOnly: true, idempotent: true, out: typeOf[wire.DesktopListResult](),
			desc: "List the agent desktops: name, status (running, dead, unresponsive), X display, size, window manager, keyboard layout, the session it was made for, and whether a batch runs on it. " +
				desktopIs + " Give a desktop's name as the desktop argument of screenshot, act, zoom, cursor_position, screen and spawn.",
		}, func(ctx context.Context, _ noIn) *mcp.CallToolResult {
			return call(ctx, t, func(c *wire.Client) (*wire.DesktopListResult, error) { return c.DesktopList(ctx) },
				func(r *wire.DesktopListResult) string {
					if len(r.Desktops) == 0 {
						return "no desktops (desktop_new makes one)"
					}
					var rows []string
					for _, d := range r.Desktops {
						row := fmt.Sprintf("%s (%s): display %s, %dx%d, wm %s, layout %s", d.Name, d.Status, d.Display, d.Width, d.Height, d.WM, d.Layout)
						if d.Reason != "" {
							row += ", " + d.Reason
						}
						rows = append(rows, row)
					}
					return fmt.Sprintf("%d desktops:\n%s", len(r.Desktops), strings.Join(rows, "\n"))
				})
		}),
		typedTool(tool{name: "channels", readOnly: true, idempotent: true, out: typeOf[wire.ChannelListResult](),
			desc: "List agentd's channels: which session each is bound to (a Claude Code session with the agentd channel), its listener, queue and counts. push sends to one.",
		}, func(ctx context.Context, _ noIn) *mcp.CallToolResult {
			return call(ctx, t, func(c *wire.Client) (*wire.ChannelListResult, error) { return c.ListChannels(ctx) }, nil)
		}),

		typedTool(tool{name: "spawn", openWorld: true, out: typeOf[wire.SessionStatus](),
			desc: acting("Start a program in a new session: a named pseudo-terminal that agentd keeps running and records. Answers the session's status."),
		}, func(ctx context.Context, in spawnIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "spawn"); r != nil {
				return r
			}
			return deskCall(ctx, t, in.Desktop, func(c *wire.Client) (*wire.SessionStatus, error) {
				return c.Spawn(ctx, wire.SpawnParams{Name: in.Name, Argv: in.Argv, Cwd: in.Cwd, Env: in.Env, Cols: in.Cols, Rows: in.Rows, Desktop: in.Desktop, KeepDesktop: in.KeepDesktop})
			}, nil)
		}),
		typedTool(tool{name: "ask", destructive: true, openWorld: true, out: typeOf[wire.AskResult](),
			desc: acting("Type a question into a running session (waiting for its prompt, pressing Enter) and answer what the program printed in reply, " +
				"read from its screen until the prompt is back and quiet. The answer is the text content. Text at most 64 KiB; by default it waits up to 10 minutes. " +
				"Sends progress notifications (what the session shows so far) when the call has a progressToken; cancelling the call cancels the ask in agentd."),
		}, t.ask),
		typedTool(tool{name: "send", destructive: true, openWorld: true, out: typeOf[sentOut](),
			desc: acting("Send input to a running session without waiting for an answer: text exactly as typed (\\n is Enter), or keys by name. Give text, keys, or both (the text first, in one write). " +
				"Key names: enter, esc, tab, up, down, left, right, home, end, pageup, pagedown, backspace, delete, space, ctrl+<letter>, alt+<key>, f1 to f12."),
		}, func(ctx context.Context, in sendIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "send"); r != nil {
				return r
			}
			return call(ctx, t, func(c *wire.Client) (sentOut, error) {
				return sentOut{Name: in.Name, Sent: true}, c.Send(ctx, wire.SendParams(in))
			}, func(sentOut) string { return "sent to " + in.Name })
		}),
		typedTool(tool{name: "resize", idempotent: true, out: typeOf[resizeOut](),
			desc: acting("Change a running session's terminal size (the program gets SIGWINCH), e.g. wider for a program whose lines wrap."),
		}, func(ctx context.Context, in resizeIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "resize"); r != nil {
				return r
			}
			return call(ctx, t, func(c *wire.Client) (resizeOut, error) {
				return resizeOut(in), c.Resize(ctx, wire.ResizeParams(in))
			}, func(r resizeOut) string { return fmt.Sprintf("%s is now %dx%d", r.Name, r.Cols, r.Rows) })
		}),
		typedTool(tool{name: "stop", destructive: true, idempotent: true, out: typeOf[wire.ExitResult](),
			desc: acting("End a session's program: a signal (default TERM) to its process group, then KILL after grace_ms (default 5000). Answers how it ended. The session's record stays (rm removes it)."),
		}, func(ctx context.Context, in stopIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "stop"); r != nil {
				return r
			}
			return call(ctx, t, func(c *wire.Client) (*wire.ExitResult, error) { return c.Stop(ctx, wire.StopParams(in)) }, nil)
		}),
		typedTool(tool{name: "restart", destructive: true, openWorld: true, out: typeOf[wire.SessionStatus](),
			desc: acting("Start an ended session's program again: the same command, directory, environment and size, its log going on after a restarted record. " +
				"Claude Code, Codex and Gemini CLI come back on their last conversation (resume_id in the answer says which). " +
				"A running session is refused unless force, which stops it first. Answers the session's status."),
		}, func(ctx context.Context, in restartIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "restart"); r != nil {
				return r
			}
			return call(ctx, t, func(c *wire.Client) (*wire.SessionStatus, error) { return c.Restart(ctx, wire.RestartParams(in)) },
				func(s *wire.SessionStatus) string {
					how := ""
					if s.ResumeID != "" {
						how = fmt.Sprintf(", resumed %s conversation %s", s.Agent, s.ResumeID)
					}
					return fmt.Sprintf("%s %s (pid %d, restart %d%s)", s.Name, s.Status, s.ProgramPID, s.Restarts, how)
				})
		}),
		typedTool(tool{name: "rm", destructive: true, idempotent: true, out: typeOf[wire.RmResult](),
			desc: acting("Remove an ended session and its files (its log and recording are gone after this). force stops a running one first."),
		}, func(ctx context.Context, in rmIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "rm"); r != nil {
				return r
			}
			return call(ctx, t, func(c *wire.Client) (*wire.RmResult, error) { return c.Rm(ctx, wire.RmParams(in)) },
				func(r *wire.RmResult) string { return "removed " + r.Name })
		}),
		typedTool(tool{name: "push", openWorld: true, out: typeOf[wire.PushResult](),
			desc: acting("Push a message into a channel: to the Claude Code session bound to it (it arrives there as a channel event). " +
				"Name the session or the channel_id (see channels). A string message arrives as its text; any other JSON as its JSON."),
		}, func(ctx context.Context, in pushIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "push"); r != nil {
				return r
			}
			if (in.Session == "") == (in.ChannelID == "") {
				return argsRefusal(malformed("push: give session or channel_id (one of them); channels lists both"))
			}
			return call(ctx, t, func(c *wire.Client) (*wire.PushResult, error) {
				return c.PushToChannel(ctx, wire.PushParams{Session: in.Session, ChannelID: in.ChannelID, Message: in.Message, Ack: in.Ack, TimeoutMS: in.TimeoutMS})
			}, nil)
		}),
		typedTool(tool{name: "act", nested: actionFields, destructive: true, openWorld: true, out: typeOf[actOut](),
			desc: acting(fmt.Sprintf("Perform a batch of input on the X11 screen, in order, then return a screenshot of the result (like screenshot's). "+
				"x and y are pixels of the LAST SCREENSHOT THIS SERVER RETURNED (not the physical screen); the server converts them with that image's scale, "+
				"and a point outside that image is refused. Take a screenshot first. At most %d actions per batch (a double click counts as two, a triple_click as three, "+
				"a left_click_drag as eight, ten with modifiers, a hold_key as two plus one per 5 s) and %d typed characters; one batch at a time per display. "+
				"desktop acts on an agent desktop instead of the user's display: its last screenshot's pixels, its own pointer and keyboard, no consent per batch (the user's kill switch still stops it). "+
				"Kinds: click {x, y, button left|right|middle, double}, triple_click {x, y} (selects a line), left_click_drag {x, y, to_x, to_y} (press at x,y, move, release at to_x,to_y), "+
				"move {x, y}, down/up {button, optional x, y}, "+
				"type {text: any Unicode, \\n is Enter}, key {key: e.g. enter, esc, tab, ctrl+s, ctrl+shift+t, alt+f4, f5, a; modifiers}, "+
				"hold_key {key, duration in seconds, optional modifiers} (holds the key that long, then lets go), key_down/key_up {key, or a modifier alone such as shift} (hold a key across the actions between them), "+
				"scroll {direction up|down|left|right, amount 1-20 (default 3), optional x, y}, wait {ms up to 5000, default 350}, focus {application: a window's name or title}. "+
				"modifiers (e.g. [\"shift\"]) are held during a click, triple_click, left_click_drag, down, up or scroll (a shift+click, a ctrl+scroll). "+
				"The waits and hold_key durations of one batch may add up to %d s at most (the batch's time budget for waiting). Whatever a batch holds is released when it ends, however it ends. "+
				"If the screen does not change after the same batch three times in a row, the fourth is refused (counted per display): look again or change approach. "+
				"The user can stop a batch by pushing the pointer into a screen corner; cancelling the call stops it too.", wire.MaxActions, wire.MaxTypedChars, waitBudgetMS/1000)),
		}, t.act),
		typedTool(tool{name: "desktop_new", out: typeOf[wire.DesktopRow](),
			desc: acting("Make an agent desktop and answer once it can be screenshot (well under a second). " + desktopIs +
				" Then give its name as the desktop argument of screenshot, act, spawn and the other screen tools; desktop_rm ends it. " +
				"agentd must allow desktops (desktops = true in its config)."),
		}, func(ctx context.Context, in desktopNewIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "desktop_new"); r != nil {
				return r
			}
			return deskCall(ctx, t, "", func(c *wire.Client) (*wire.DesktopRow, error) {
				return c.DesktopNew(ctx, wire.DesktopNewParams{Name: in.Name, Size: in.Size, WM: in.WM, Layout: in.Layout})
			},
				func(d *wire.DesktopRow) string {
					return fmt.Sprintf("desktop %s is running: display %s, %dx%d, wm %s, layout %s. Give desktop %q to screenshot, act or spawn.",
						d.Name, d.Display, d.Width, d.Height, d.WM, d.Layout, d.Name)
				})
		}),
		typedTool(tool{name: "desktop_rm", destructive: true, idempotent: true, out: typeOf[desktopRmOut](),
			desc: acting("End an agent desktop: its X server, window manager and every program on it, and remove its files. " +
				"Refused while a batch runs on it unless force."),
		}, func(ctx context.Context, in desktopRmIn) *mcp.CallToolResult {
			if r := t.gate(ctx, "desktop_rm"); r != nil {
				return r
			}
			return call(ctx, t, func(c *wire.Client) (desktopRmOut, error) {
				if err := c.DesktopRm(ctx, wire.DesktopRmParams(in)); err != nil {
					return desktopRmOut{}, err
				}
				t.forget(in.Name)
				return desktopRmOut{Name: in.Name, Removed: true}, nil
			}, func(r desktopRmOut) string { return "removed desktop " + r.Name })
		}),
	}
}

// deskCall is call for a tool aimed at desktop (empty: the user's display,
// or no target): its refusal carries deskHint's fix.
func deskCall[R any](ctx context.Context, t *tools, desktop string, f func(c *wire.Client) (R, error), text func(R) string) *mcp.CallToolResult {
	res := call(ctx, t, f, text)
	return deskHint(res, desktop)
}

// deskHint adds the fix to a refusal about desktops: for a desktop target
// that does not exist or is dead, the tools that fix it; for desktops
// turned off in agentd, that only the user can turn them on.
func deskHint(res *mcp.CallToolResult, desktop string) *mcp.CallToolResult {
	if !res.IsError {
		return res
	}
	b, ok := res.StructuredContent.(refusalBody)
	if !ok || strings.Contains(b.Reason, "desktop_new") {
		return res
	}
	switch {
	case b.Code == string(wire.CodeScreenUnavailable) && desktop != "" && desktop != "new":
		b.Reason += fmt.Sprintf("; the desktops tool lists the desktops there are, and desktop_new (name %q) makes this one", desktop)
	case b.Code == string(wire.CodeRefused) && strings.HasPrefix(b.Reason, "desktops are disabled"):
		b.Reason += ". You cannot change agentd's config: ask the user to, or work on their display (omit desktop)"
	default:
		return res
	}
	return refusal(b.Code, b.Reason, b.Retryable, b.Details)
}

// deskMissing is the refusal for a desktop target that cannot be used (it
// does not exist, is dead, or desktops are off), or nil when it can; a
// call that would otherwise say "take a screenshot first" asks this
// first, so the model learns the real fix.
func (t *tools) deskMissing(ctx context.Context, desktop string) *mcp.CallToolResult {
	if desktop == "" {
		return nil
	}
	c, err := t.conn(ctx)
	if err != nil {
		return failure(err)
	}
	if _, err := c.ScreenOf(ctx, wire.ScreenParams{Desktop: desktop}); err != nil {
		return deskHint(failure(err), desktop)
	}
	return nil
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
	p := wire.ScreenshotParams{Desktop: in.Desktop, Format: "jpeg", Region: (*wire.Region)(in.Region), Monitor: in.Monitor}
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
		scr, err := c.ScreenOf(ctx, wire.ScreenParams{Desktop: in.Desktop})
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
// without the image bytes, which travel as the image block, and the
// pointer in the image's pixels.
func shotResult(s *wire.ScreenshotResult) shotOut {
	r := shotOut{ScreenshotResult: *s}
	r.Image = nil
	if x, y, ok := spaceOf(s).toImage(s.Pointer); ok {
		r.PointerInImage = &wire.Point{X: x, Y: y}
	}
	return r
}

// imageOf is the image block of a screenshot.
func imageOf(s *wire.ScreenshotResult) *mcp.ImageContent {
	return &mcp.ImageContent{Data: s.Image, MIMEType: "image/" + s.Format}
}

// remember makes s the image the model last saw of p's target.
func (t *tools) remember(s *wire.ScreenshotResult, p wire.ScreenshotParams) (changed bool) {
	sum := sha256.Sum256(s.Image)
	t.smu.Lock()
	defer t.smu.Unlock()
	v := t.viewOf(p.Desktop)
	sp := spaceOf(s)
	changed = v.seen == nil || sum != v.imageHash || *v.seen != sp
	v.seen, v.shot, v.imageHash = &sp, p, sum
	return changed
}

func (t *tools) screenshot(ctx context.Context, in screenshotIn) *mcp.CallToolResult {
	c, err := t.conn(ctx)
	if err != nil {
		return failure(err)
	}
	p, err := t.modelShot(ctx, c, in)
	if err != nil {
		return deskHint(failure(err), in.Desktop)
	}
	s, err := c.Screenshot(ctx, p)
	if err != nil {
		return deskHint(failure(err), in.Desktop)
	}
	if t.remember(s, p) {
		t.smu.Lock()
		t.viewOf(in.Desktop).guard.reset()
		t.smu.Unlock()
	}
	text := shotText(s)
	if in.Desktop != "" {
		text = "desktop " + in.Desktop + ": " + text + " Give act the same desktop."
	}
	return answer(shotResult(s), text, imageOf(s))
}

// shotText tells the model which space the image is in.
func shotText(s *wire.ScreenshotResult) string {
	pointer := "pointer outside this image"
	if x, y, ok := spaceOf(s).toImage(s.Pointer); ok {
		pointer = fmt.Sprintf("pointer at %d,%d of this image", x, y)
	}
	return fmt.Sprintf("%dx%d %s of screen area %d,%d %dx%d (scale %.4g image pixels per screen pixel); %s; active window %q. "+
		"act's x and y are pixels of this image.", s.Width, s.Height, s.Format, s.Area.X, s.Area.Y, s.Area.Width, s.Area.Height, s.Scale,
		pointer, s.ActiveWindow)
}

// zoom shows part of the last image at up to the screen's resolution,
// without making it the space act's coordinates are in.
func (t *tools) zoom(ctx context.Context, in zoomIn) *mcp.CallToolResult {
	seen := t.seenOf(in.Desktop)
	if seen == nil {
		if r := t.deskMissing(ctx, in.Desktop); r != nil {
			return r
		}
		what := "take a screenshot first: zoom's x, y, width and height are pixels of the last screenshot, and there is none yet"
		if in.Desktop != "" {
			what = fmt.Sprintf("take a screenshot of desktop %q first (screenshot with desktop %q): zoom's x, y, width and height are pixels of its last screenshot, and there is none yet", in.Desktop, in.Desktop)
		}
		return refusal(codeBadArgs, what, false, nil)
	}
	x1, y1 := in.X+in.Width-1, in.Y+in.Height-1
	if in.Width < 1 {
		x1 = in.X
	}
	if in.Height < 1 {
		y1 = in.Y
	}
	sx0, sy0, err := seen.toScreen(1, "zoom", in.X, in.Y)
	if err != nil {
		return refusal(codeBadArgs, strings.Replace(err.Error(), "action 1 (zoom): ", "zoom: ", 1), false, nil)
	}
	sx1, sy1, err := seen.toScreen(1, "zoom", x1, y1)
	if err != nil {
		return refusal(codeBadArgs, strings.Replace(err.Error(), "action 1 (zoom): ", "zoom: the far corner ", 1)+"; make x+width and y+height at most the image's size", false, nil)
	}
	region := &wire.Region{X: int(sx0), Y: int(sy0), Width: int(sx1-sx0) + 1, Height: int(sy1-sy0) + 1}
	c, err := t.conn(ctx)
	if err != nil {
		return failure(err)
	}
	p, err := t.modelShot(ctx, c, screenshotIn{targetIn: in.targetIn, Region: (*regionIn)(region), Format: in.Format})
	if err != nil {
		return deskHint(failure(err), in.Desktop)
	}
	s, err := c.Screenshot(ctx, p)
	if err != nil {
		return deskHint(failure(err), in.Desktop)
	}
	text := fmt.Sprintf("zoom of %gx%g pixels at %g,%g of the last screenshot (screen area %d,%d %dx%d), as a %dx%d %s. act's x and y are still pixels of the last screenshot, not of this zoom.",
		in.Width, in.Height, in.X, in.Y, s.Area.X, s.Area.Y, s.Area.Width, s.Area.Height, s.Width, s.Height, s.Format)
	out := shotResult(s)
	if x, y, ok := seen.toImage(s.Pointer); ok {
		out.PointerInImage = &wire.Point{X: x, Y: y}
	} else {
		out.PointerInImage = nil
	}
	return answer(out, text, imageOf(s))
}

// cursorPosition reads the pointer (a 1x1 screenshot carries it) and puts
// it in the last image's pixels.
func (t *tools) cursorPosition(ctx context.Context, in targetIn) *mcp.CallToolResult {
	c, err := t.conn(ctx)
	if err != nil {
		return failure(err)
	}
	s, err := c.Screenshot(ctx, wire.ScreenshotParams{Desktop: in.Desktop, Format: "png", Region: &wire.Region{X: 0, Y: 0, Width: 1, Height: 1}})
	if err != nil {
		return deskHint(failure(err), in.Desktop)
	}
	out := cursorOut{Screen: s.Pointer}
	seen := t.seenOf(in.Desktop)
	text := fmt.Sprintf("pointer at screen %d,%d", s.Pointer.X, s.Pointer.Y)
	switch {
	case seen == nil:
		text += "; no screenshot taken yet, so no image coordinates (take a screenshot)"
	default:
		out.ImageWidth, out.ImageHeight = seen.width, seen.height
		if x, y, ok := seen.toImage(s.Pointer); ok {
			out.Image = &wire.Point{X: x, Y: y}
			text = fmt.Sprintf("pointer at %d,%d of the last screenshot (%dx%d); screen %d,%d", x, y, seen.width, seen.height, s.Pointer.X, s.Pointer.Y)
		} else {
			text += fmt.Sprintf(", outside the last screenshot (%dx%d)", seen.width, seen.height)
		}
	}
	return answer(out, text)
}

// progressEvery is how often a long call with a progressToken reports.
const progressEvery = time.Second

// progress sends progress notifications while a long call on session name
// runs, when the client asked for them (a progressToken): one at once,
// then one every progressEvery with the session's last screen lines. The
// returned stop ends them; it waits for a notification being sent.
func (t *tools) progress(ctx context.Context, what, name string) (stop func()) {
	req := requestOf(ctx)
	if req == nil || req.Params == nil || req.Session == nil {
		return func() {}
	}
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for n := 1; ; n++ {
			msg := fmt.Sprintf("%s %s: started", what, name)
			if n > 1 {
				msg = fmt.Sprintf("%s %s: %.0f s so far", what, name, time.Since(start).Seconds())
				if c, err := t.conn(ctx); err == nil {
					if snap, err := c.Snapshot(ctx, name); err == nil {
						msg += "; its screen ends: " + lastLines(snap.Lines, 3)
					}
				}
			}
			if ctx.Err() != nil {
				return
			}
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n), Message: msg})
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// lastLines is the last n non-blank lines of a screen, joined by " | ".
func lastLines(lines []string, n int) string {
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := strings.TrimRight(lines[i], " "); l != "" {
			out = append([]string{l}, out...)
		}
	}
	if len(out) == 0 {
		return "(blank)"
	}
	return strings.Join(out, " | ")
}

func (t *tools) ask(ctx context.Context, in askIn) *mcp.CallToolResult {
	if r := t.gate(ctx, "ask"); r != nil {
		return r
	}
	stop := t.progress(ctx, "asking", in.Name)
	defer stop()
	return call(ctx, t, func(*wire.Client) (*wire.AskResult, error) {
		return long(ctx, t, func(c *wire.Client) (*wire.AskResult, error) { return c.Ask(ctx, wire.AskParams(in)) })
	},
		func(r *wire.AskResult) string { return r.Answer })
}

func (t *tools) wait(ctx context.Context, in waitIn) *mcp.CallToolResult {
	p := wire.WaitParams{Name: in.Name, Until: in.Until, IdleMS: in.IdleMS, Exit: in.Exit, Ready: in.Ready, States: in.States, TimeoutMS: in.TimeoutMS}
	switch {
	case in.Text != "" && in.Until != "":
		return argsRefusal(malformed("wait: give text (literal) or until (a regular expression), not both"))
	case in.Text != "":
		p.Until = regexp.QuoteMeta(in.Text)
	}
	if p.Until == "" && p.IdleMS == 0 && !p.Exit && !p.Ready && len(p.States) == 0 {
		return argsRefusal(malformed("wait: say what to wait for: text, until, idle_ms, ready, states or exit (any of them; the first to hold ends the wait)"))
	}
	stop := t.progress(ctx, "waiting on", in.Name)
	defer stop()
	return call(ctx, t, func(*wire.Client) (*wire.WaitResult, error) {
		return long(ctx, t, func(c *wire.Client) (*wire.WaitResult, error) { return c.Wait(ctx, p) })
	},
		func(r *wire.WaitResult) string {
			return fmt.Sprintf("%s: %s after %d ms; its screen:\n%s", r.Name, r.Reason, r.ElapsedMS, strings.TrimRight(strings.Join(r.Screen, "\n"), "\n "))
		})
}

func (t *tools) act(ctx context.Context, in actIn) *mcp.CallToolResult {
	if !t.cfg.Yes {
		reason := fmt.Sprintf(disabledReason, "act")
		// Say whether the daemon's consent is missing too, so the user
		// fixes both at once.
		if c, err := t.conn(ctx); err != nil {
			reason += ". Also: " + err.Error()
		} else if scr, err := c.Screen(ctx); err == nil && !scr.AllowAct && in.Desktop == "" {
			reason += ". agentd does not allow acting on the screen either: it must also be started with --allow-act (or allow_act = true in its config.toml)"
		}
		return refusal(codeDisabled, reason, false, nil)
	}
	if err := checkActions(in.Actions); err != nil {
		return argsRefusal(err)
	}
	key, _ := json.Marshal(in)
	t.smu.Lock()
	v := t.viewOf(in.Desktop)
	seen, shot, lastHash := v.seen, v.shot, v.imageHash
	allowed := v.guard.allow(string(key))
	t.smu.Unlock()
	if !allowed && seen != nil {
		// The guard is about a screen that does not change: look once more
		// before refusing, since something else may have changed it.
		if c, err := t.conn(ctx); err == nil {
			if s, err := c.Screenshot(ctx, shot); err == nil && sha256.Sum256(s.Image) != lastHash {
				t.smu.Lock()
				t.viewOf(in.Desktop).guard.reset()
				t.smu.Unlock()
				allowed = true
			}
		}
	}
	if !allowed {
		t.smu.Lock()
		nth, unchanged := t.viewOf(in.Desktop).guard.refuse()
		t.smu.Unlock()
		look := "Take a screenshot and look again"
		if in.Desktop != "" {
			look = fmt.Sprintf("Take a screenshot of it (desktop %q) and look again", in.Desktop)
		}
		return refusal(string(wire.CodeRefused), fmt.Sprintf("loop guard on %s: this is the %s batch in a row with the same actions, and the screen did not change after the last %d that ran. "+
			"%s, or change approach (other coordinates, a key instead of a click, another tool)", targetName(in.Desktop), ordinal(nth), unchanged, look), false, nil)
	}
	hasPoint := false
	for _, a := range in.Actions {
		hasPoint = hasPoint || a.X != nil || a.Y != nil
	}
	if hasPoint && seen == nil {
		if r := t.deskMissing(ctx, in.Desktop); r != nil {
			return r
		}
		what := "take a screenshot first: act's x and y are pixels of the last screenshot this server returned, and it has returned none yet"
		if in.Desktop != "" {
			what = fmt.Sprintf("take a screenshot of desktop %q first (screenshot with desktop %q): act's x and y are pixels of that desktop's last screenshot this server returned, and it has returned none yet", in.Desktop, in.Desktop)
		}
		return refusal(codeBadArgs, what, false, nil)
	}
	var sp space
	if seen != nil {
		sp = *seen
	}
	actions, origin, err := sp.expand(in.Actions)
	if err != nil {
		return refusal(codeBadArgs, err.Error(), false, nil)
	}
	p := wire.ActParams{Desktop: in.Desktop, Actions: actions, Observe: in.Observe, SettleMS: in.SettleMS}
	c, err := t.conn(ctx)
	if err != nil {
		return failure(err)
	}
	observe := in.Observe == nil || *in.Observe
	if observe {
		if seen == nil {
			if shot, err = t.modelShot(ctx, c, screenshotIn{targetIn: in.targetIn}); err != nil {
				return deskHint(failure(err), in.Desktop)
			}
		}
		// The batch's own desktop applies to its observation.
		obs := shot
		obs.Desktop = ""
		p.Screenshot = &obs
	}
	// A connection of its own: cancelling the call stops the batch.
	r, err := long(ctx, t, func(c *wire.Client) (*wire.ActResult, error) { return c.Act(ctx, p) })
	if err != nil {
		var we *wire.Error
		if errors.As(err, &we) {
			// The daemon numbers its own actions; the model knows its own.
			we.Message = renumber(we.Message, origin, in.Actions)
		}
		res := deskHint(failure(withoutImage(err)), in.Desktop)
		if errors.Is(err, wire.ErrRefused) && in.Desktop == "" {
			// The kill switch or the daemon's consent: say which.
			if scr, serr := c.Screen(ctx); serr == nil && !scr.AllowAct {
				b := res.StructuredContent.(refusalBody)
				b.Reason = "this server allows acting (--yes), but agentd does not: " + b.Reason
				return refusal(b.Code, b.Reason, b.Retryable, b.Details)
			}
		}
		return res
	}
	out := actOut{ActResult: *r}
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
	t.viewOf(in.Desktop).guard.ran(string(key), changed)
	t.smu.Unlock()
	return answer(out, text, extra...)
}

// checkActions refuses what the daemon's actions cannot do as asked, with
// the fix: modifiers go with keys and pointer actions only, to_x and to_y
// belong to left_click_drag, duration to hold_key, and the batch's waits and
// holds fit its budget for waiting.
func checkActions(actions []mcpAction) error {
	waited := 0.0
	for i, a := range actions {
		n := i + 1
		if len(a.Modifiers) > 0 && !modifiable[string(a.Kind)] {
			return malformed("action %d (%s): modifiers apply to key, hold_key, key_down, key_up, click, triple_click, left_click_drag, down, up and scroll; to hold a key across other actions use key_down before them and key_up after", n, a.Kind)
		}
		drag := a.Kind == "left_click_drag"
		if !drag && (a.ToX != nil || a.ToY != nil) {
			return malformed("action %d (%s): to_x and to_y belong to left_click_drag", n, a.Kind)
		}
		if (drag || a.Kind == "triple_click") && (a.X == nil || a.Y == nil) {
			return malformed("action %d (%s): needs x and y (pixels of the last screenshot)", n, a.Kind)
		}
		if drag && (a.ToX == nil || a.ToY == nil) {
			return malformed("action %d (left_click_drag): needs to_x and to_y, where to release (pixels of the last screenshot)", n)
		}
		if (drag || a.Kind == "triple_click") && a.Double {
			return malformed("action %d (%s): double belongs to click", n, a.Kind)
		}
		hold := a.Kind == "hold_key"
		if !hold && a.Duration != nil {
			return malformed("action %d (%s): duration belongs to hold_key (a pause is wait {ms})", n, a.Kind)
		}
		if hold {
			if strings.TrimSpace(a.Key) == "" {
				return malformed("action %d (hold_key): needs key, the key to hold (e.g. shift, a, space, ctrl+a)", n)
			}
			if a.Duration == nil || !(*a.Duration > 0) || math.IsInf(*a.Duration, 0) {
				return malformed("action %d (hold_key): needs duration, the seconds to hold the key (more than 0, e.g. 1.5)", n)
			}
			waited += *a.Duration * 1000
		}
		if a.Kind == "wait" {
			ms := 350.0 // the daemon's default wait
			if a.MS != nil {
				ms = *a.MS
			}
			waited += ms
		}
		if waited > waitBudgetMS {
			return malformed("action %d (%s): the batch would wait and hold keys for %g s, over its time budget of %d s for waiting (wait ms and hold_key durations together); hold or wait less, or split it across batches (a batch releases what it holds when it ends)",
				n, a.Kind, math.Round(waited)/1000, waitBudgetMS/1000)
		}
	}
	return nil
}

// waitBudgetMS is how long the waits and hold_key durations of one act
// batch may add up to: a model should look at the screen again rather than
// keep its input waiting longer.
const waitBudgetMS = 30000

// modifiable are the kinds that take modifiers.
var modifiable = map[string]bool{"key": true, "hold_key": true, "key_down": true, "key_up": true, "click": true,
	"triple_click": true, "left_click_drag": true, "down": true, "up": true, "scroll": true}

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
