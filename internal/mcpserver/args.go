package mcpserver

import (
	"encoding/json"

	"github.com/agentd/agentd/pkg/wire"
)

// The tools' arguments. Each type is a tool's input schema (schema.go):
// the json tag names an argument (omitempty: optional), the jsonschema tag
// describes it for the model, the mcp tag gives its limits. Where the
// arguments are exactly a contract type's fields, the type has the same
// fields in the same order, so a conversion (wire.AskParams(in)) carries
// them and the compiler holds the two together.
type (
	listIn struct {
		Status []wire.Status `json:"status,omitempty" jsonschema:"only sessions in these statuses; all when omitted"`
	}
	nameIn struct {
		Name string `json:"name" mcp:"pattern=name" jsonschema:"{sessionName}"`
	}
	logsIn struct {
		Name    string `json:"name" mcp:"pattern=name" jsonschema:"{sessionName}"`
		FromSeq uint64 `json:"from_seq,omitempty" jsonschema:"the first event's sequence number; 0 (default) is the oldest kept"`
		Since   string `json:"since,omitempty" jsonschema:"start at a seq (\"120\"), a duration ago (\"5m\") or a time (\"2026-11-30T20:00:00Z\")"`
		Tail    int    `json:"tail,omitempty" mcp:"minimum=0" jsonschema:"start at the last this many events"`
		Plain   bool   `json:"plain,omitempty" jsonschema:"output as plain text lines, as a person saw it"`
		Limit   int    `json:"limit,omitempty" mcp:"minimum=1,maximum=wire.MaxLogEvents" jsonschema:"at most this many events (default {logsDefaultLimit})"`
	}
	waitIn struct {
		Name      string   `json:"name" mcp:"pattern=name" jsonschema:"{sessionName}"`
		Text      string   `json:"text,omitempty" mcp:"minLength=1" jsonschema:"end when this text appears (matched literally)"`
		Until     string   `json:"until,omitempty" mcp:"minLength=1" jsonschema:"end when this regular expression (RE2) matches the screen or new output"`
		IdleMS    int64    `json:"idle_ms,omitempty" mcp:"minimum=1,maximum=wire.MaxDurationMS" jsonschema:"end once the session has printed nothing for this many milliseconds"`
		Exit      bool     `json:"exit,omitempty" jsonschema:"end when the session's program exits"`
		Ready     bool     `json:"ready,omitempty" jsonschema:"end when the session's program waits for input (blocked reading its terminal, nothing typed left unread)"`
		States    []string `json:"states,omitempty" mcp:"enum=waitState" jsonschema:"end when the session's state is one of these: working, waiting, needs_approval, needs_attention (agent CLIs), ready, busy (any program)"`
		TimeoutMS int64    `json:"timeout_ms,omitempty" mcp:"minimum=1,maximum=wire.MaxDurationMS" jsonschema:"{timeout}"`
	}
	// targetIn is a screen tool's target: the user's display or an
	// agent desktop. The screen tools' arguments embed it.
	targetIn struct {
		Desktop string `json:"desktop,omitempty" mcp:"pattern=name" jsonschema:"{target}"`
	}
	screenshotIn struct {
		targetIn
		Region  *regionIn `json:"region,omitempty" jsonschema:"a part of the screen, in physical screen pixels (see screen for the size); the whole screen when omitted"`
		Monitor *int      `json:"monitor,omitempty" mcp:"minimum=0" jsonschema:"only this monitor (its index in screen's monitors); ignored with region"`
		Format  string    `json:"format,omitempty" mcp:"enum=format" jsonschema:"jpeg (default, quality 80) or png (lossless, larger)"`
	}
	// regionIn is wire.Region with its limits.
	regionIn struct {
		X      int `json:"x" mcp:"minimum=0"`
		Y      int `json:"y" mcp:"minimum=0"`
		Width  int `json:"width" mcp:"minimum=1"`
		Height int `json:"height" mcp:"minimum=1"`
	}
	zoomIn struct {
		targetIn
		X      float64 `json:"x" mcp:"minimum=0" jsonschema:"left edge, in the last screenshot's pixels"`
		Y      float64 `json:"y" mcp:"minimum=0" jsonschema:"top edge, in the last screenshot's pixels"`
		Width  float64 `json:"width" mcp:"exclusiveMinimum=0" jsonschema:"in the last screenshot's pixels"`
		Height float64 `json:"height" mcp:"exclusiveMinimum=0" jsonschema:"in the last screenshot's pixels"`
		Format string  `json:"format,omitempty" mcp:"enum=format" jsonschema:"jpeg (default) or png"`
	}
	noIn    struct{}
	spawnIn struct {
		Name        string            `json:"name" mcp:"pattern=name" jsonschema:"{sessionName}"`
		Argv        []string          `json:"argv" mcp:"minItems=1" jsonschema:"the program and its arguments, e.g. [\"bash\"] or [\"python3\", \"-q\"]; no shell is involved"`
		Cwd         string            `json:"cwd,omitempty" jsonschema:"working directory, absolute; the user's home when omitted"`
		Env         map[string]string `json:"env,omitempty" jsonschema:"variables added to the program's environment"`
		Cols        int               `json:"cols,omitempty" mcp:"minimum=1,maximum=1000" jsonschema:"terminal columns (default 120)"`
		Rows        int               `json:"rows,omitempty" mcp:"minimum=1,maximum=1000" jsonschema:"terminal rows (default 40)"`
		Desktop     string            `json:"desktop,omitempty" mcp:"pattern=name" jsonschema:"start the program on this agent desktop (it gets its DISPLAY and XAUTHORITY), or \"new\" for a desktop made for this session and removed with it. {desktopIs}"`
		KeepDesktop bool              `json:"keep_desktop,omitempty" jsonschema:"with desktop \"new\": keep the desktop when the session ends"`
	}
	// askIn is wire.AskParams.
	askIn struct {
		Name          string      `json:"name" mcp:"pattern=name" jsonschema:"{sessionName}"`
		Text          string      `json:"text" mcp:"minLength=1,maxLength=65536" jsonschema:"the question or command, without a trailing newline; at most 64 KiB"`
		TimeoutMS     int64       `json:"timeout_ms,omitempty" mcp:"minimum=1,maximum=wire.MaxDurationMS" jsonschema:"{timeout}"`
		IdleMS        int64       `json:"idle_ms,omitempty" mcp:"minimum=1,maximum=wire.MaxDurationMS" jsonschema:"end once the program has been quiet this many milliseconds after it started answering"`
		Until         string      `json:"until,omitempty" jsonschema:"end when this regular expression (RE2) matches the new output or the screen"`
		LockTimeoutMS int64       `json:"lock_timeout_ms,omitempty" mcp:"minimum=1,maximum=wire.MaxDurationMS" jsonschema:"wait this long for another ask on the same session"`
		Via           wire.AskVia `json:"via,omitempty" jsonschema:"auto (default): the session's channel when one is bound, else the terminal"`
	}
	// sendIn is wire.SendParams.
	sendIn struct {
		Name string   `json:"name" mcp:"pattern=name" jsonschema:"{sessionName}"`
		Text string   `json:"text,omitempty" mcp:"maxLength=65536" jsonschema:"text to type, at most 64 KiB; \\n is Enter"`
		Keys []string `json:"keys,omitempty" mcp:"minItems=1" jsonschema:"key names pressed in order, e.g. [\"ctrl+c\"] or [\"up\", \"enter\"]"`
	}
	// resizeIn is wire.ResizeParams.
	resizeIn struct {
		Name string `json:"name" mcp:"pattern=name" jsonschema:"{sessionName}"`
		Cols int    `json:"cols" mcp:"minimum=1,maximum=1000" jsonschema:"columns"`
		Rows int    `json:"rows" mcp:"minimum=1,maximum=1000" jsonschema:"rows"`
	}
	// stopIn is wire.StopParams.
	stopIn struct {
		Name    string `json:"name" mcp:"pattern=name" jsonschema:"{sessionName}"`
		Signal  string `json:"signal,omitempty" mcp:"enum=signal" jsonschema:"the first signal (default TERM)"`
		GraceMS int64  `json:"grace_ms,omitempty" mcp:"minimum=0,maximum=wire.MaxDurationMS" jsonschema:"milliseconds before KILL follows (default 5000)"`
		Force   bool   `json:"force,omitempty" jsonschema:"also end a session whose worker does not answer (unresponsive or broken)"`
	}
	// restartIn is wire.RestartParams.
	restartIn struct {
		Name  string `json:"name" mcp:"pattern=name" jsonschema:"{sessionName}"`
		Force bool   `json:"force,omitempty" jsonschema:"stop the session first if it still runs (without it a running session is refused)"`
	}
	// rmIn is wire.RmParams.
	rmIn struct {
		Name  string `json:"name" mcp:"pattern=name" jsonschema:"{sessionName}"`
		Force bool   `json:"force,omitempty" jsonschema:"stop the session first if it still runs"`
	}
	pushIn struct {
		Session   string          `json:"session,omitempty" jsonschema:"the session whose channel gets it"`
		ChannelID string          `json:"channel_id,omitempty" jsonschema:"the channel, as channels lists it"`
		Message   json.RawMessage `json:"message" jsonschema:"the message: a string, or any JSON value (at most 64 KiB)"`
		Ack       bool            `json:"ack,omitempty" jsonschema:"wait until the listener has taken it"`
		TimeoutMS int64           `json:"timeout_ms,omitempty" mcp:"minimum=1,maximum=wire.MaxDurationMS" jsonschema:"with ack: give up after this long (default 30000)"`
	}
	actIn struct {
		targetIn
		Actions  []mcpAction `json:"actions" mcp:"minItems=1,maxItems=wire.MaxActions" jsonschema:"the actions, run in order"`
		Observe  *bool       `json:"observe,omitempty" jsonschema:"return a screenshot after the batch (default true)"`
		SettleMS *float64    `json:"settle_ms,omitempty" mcp:"minimum=0,maximum=5000" jsonschema:"milliseconds to wait before that screenshot (default 300)"`
	}
	// mcpAction is one act action as a model writes it: the daemon's
	// action, plus the end point of a left_click_drag and the seconds of
	// a hold_key.
	mcpAction struct {
		actionIn
		ToX      *float64 `json:"to_x,omitempty" jsonschema:"left_click_drag: where to release, pixels from the left of the last screenshot"`
		ToY      *float64 `json:"to_y,omitempty" jsonschema:"left_click_drag: where to release, pixels from the top of the last screenshot"`
		Duration *float64 `json:"duration,omitempty" mcp:"exclusiveMinimum=0" jsonschema:"hold_key: seconds to hold the key, e.g. 1.5; with the batch's waits at most {waitBudgetS} s"`
	}
	// actionIn is wire.Action, with the kinds a model may also write
	// (see actionKinds).
	actionIn struct {
		Kind        wire.ActionKind      `json:"kind" mcp:"enum=actionKind"`
		X           *float64             `json:"x,omitempty" jsonschema:"pixels from the left of the last screenshot"`
		Y           *float64             `json:"y,omitempty" jsonschema:"pixels from the top of the last screenshot"`
		Button      wire.Button          `json:"button,omitempty" jsonschema:"default left"`
		Double      bool                 `json:"double,omitempty" jsonschema:"click: a double click (counts as two actions)"`
		Text        *string              `json:"text,omitempty" jsonschema:"type: the text; \\n is Enter, \\t is Tab"`
		Key         string               `json:"key,omitempty" jsonschema:"key, hold_key, key_down, key_up: a name such as enter, esc, tab, backspace, delete, space, up, pageup, f5, a single character, or a chord such as ctrl+shift+t; key_down and key_up also take a modifier alone (shift, ctrl, alt, super)"`
		Modifiers   []string             `json:"modifiers,omitempty" mcp:"enum=modifier" jsonschema:"modifiers held with a key, hold_key, key_down or key_up, or during a click, triple_click, left_click_drag, down, up or scroll, e.g. [\"shift\"]"`
		Direction   wire.ScrollDirection `json:"direction,omitempty"`
		Amount      *float64             `json:"amount,omitempty" mcp:"minimum=1,maximum=20" jsonschema:"scroll: steps, 1 to 20 (default 3)"`
		MS          *float64             `json:"ms,omitempty" mcp:"minimum=0,maximum=maxWaitMS" jsonschema:"wait: milliseconds, at most 5000 (default 350)"`
		Application string               `json:"application,omitempty" jsonschema:"focus: the window's application name or title"`
		URI         string               `json:"uri,omitempty" jsonschema:"focus: optional document or URL the window shows"`
	}
	desktopNewIn struct {
		Name   string `json:"name,omitempty" mcp:"pattern=name,not=new" jsonschema:"its name: lower-case letters, digits, '.', '_' and '-', at most 63 (not \"new\"); desktop-N when omitted"`
		Size   string `json:"size,omitempty" mcp:"pattern=desktopSize" jsonschema:"WIDTHxHEIGHT, each side 320 to 7680 (default 1280x800)"`
		WM     string `json:"wm,omitempty" mcp:"enum=wm" jsonschema:"window manager: openbox (default) or none"`
		Layout string `json:"layout,omitempty" mcp:"minLength=1" jsonschema:"XKB keyboard layout, e.g. us (default), de, fr"`
	}
	// desktopRmIn is wire.DesktopRmParams.
	desktopRmIn struct {
		Name  string `json:"name" mcp:"pattern=name" jsonschema:"the desktop's name, as desktops lists it"`
		Force bool   `json:"force,omitempty" jsonschema:"remove it even while a batch runs on it (the batch fails)"`
	}
)

// actionKinds are act's kinds: the daemon's, and the computer-use actions
// models are trained on, composed here from them (see space.expand).
var actionKinds = append(asStrings(wire.ActionKinds), "triple_click", "left_click_drag", "hold_key")

// asStrings is a typed enumeration's values as strings.
func asStrings[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
