package wire

import "time"

// Screen methods (agent.*): the X11 display.
const (
	MethodScreenshot = "agent.screenshot"
	MethodAct        = "agent.act"
	MethodScreen     = "agent.screen"
	// MethodRecordScreen writes the screen record: the audit log's batches
	// with the observations kept (record_screen = true) as a page a person
	// steps through.
	MethodRecordScreen = "agent.record_screen"
)

// RecordScreenParams ask for a screen record in Dir (absolute): index.html
// and numbered images of the batches between Since and Until (zero:
// unbounded). An existing non-empty Dir is refused unless Overwrite.
type RecordScreenParams struct {
	// Desktop is the target: empty for the person's display, or a
	// desktop's name (its batches only).
	Desktop   string    `json:"desktop,omitempty"`
	Dir       string    `json:"dir"`
	Since     time.Time `json:"since,omitzero"`
	Until     time.Time `json:"until,omitzero"`
	Overwrite bool      `json:"overwrite,omitempty"`
}

// RecordScreenResult says what a screen record holds; Skipped counts audit
// lines that could not be read.
type RecordScreenResult struct {
	Dir     string `json:"dir"`
	Batches int    `json:"batches"`
	Images  int    `json:"images"`
	Skipped int    `json:"skipped,omitempty"`
}

// Region is a rectangle in screen pixels.
type Region struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Point is a position in screen pixels.
type Point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// ScreenshotParams ask for a screenshot: PNG by default, JPEG with a
// quality; cropped to Region or a monitor; scaled down to MaxWidth; written
// to Path (absolute) instead of returned inline. An existing file at Path
// is refused (invalid_params) unless Overwrite; a symbolic link there is
// never written through, Overwrite or not.
type ScreenshotParams struct {
	// Desktop is the target: empty for the person's display, or the name
	// of an agent's desktop (agent.desktop_new). Inside agent.act's
	// screenshot it must be empty: the batch's own Desktop applies.
	Desktop  string  `json:"desktop,omitempty"`
	Format   string  `json:"format,omitempty"`  // png (default) or jpeg
	Quality  *int    `json:"quality,omitempty"` // JPEG quality 1-100 (default 80)
	Region   *Region `json:"region,omitempty"`
	Monitor  *int    `json:"monitor,omitempty"` // index in agent.screen's monitors
	MaxWidth *int    `json:"max_width,omitempty"`
	Path     string  `json:"path,omitempty"`
	// Overwrite lets a screenshot replace an existing regular file at Path
	// (agentctl screenshot --force).
	Overwrite bool `json:"overwrite,omitempty"`
}

// MaxInlineImageBytes is the largest image sent inline: its base64 must fit
// in one frame with room for the rest of the answer. Larger images are
// refused with a message to use path or max_width, never cut.
const MaxInlineImageBytes = (MaxFrameSize - 64<<10) / 4 * 3

// ScreenshotResult is a screenshot. Image is the encoded image (base64 in
// JSON) unless it was written to Path or is Unchanged.
type ScreenshotResult struct {
	FrameID uint64 `json:"frame_id"`
	Format  string `json:"format"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	Image   []byte `json:"image,omitempty"`
	Path    string `json:"path,omitempty"`
	Bytes   int    `json:"bytes"`
	// Area is the captured part of the screen. Scale is image pixels per
	// screen pixel: image point (x, y) is screen point
	// (Area.X + x/Scale, Area.Y + y/Scale).
	Area         Region    `json:"area"`
	Scale        float64   `json:"scale"`
	CapturedAt   time.Time `json:"captured_at"`
	Pointer      Point     `json:"pointer"`
	ActiveWindow string    `json:"active_window"`
	Method       string    `json:"method"` // mit-shm or getimage
	CaptureMS    float64   `json:"capture_ms"`
	EncodeMS     float64   `json:"encode_ms"`
	// Unchanged marks an observation identical to the previous one this
	// connection received; it carries no image.
	Unchanged bool `json:"unchanged,omitempty"`
}

// Action is one step of an agent.act batch. Kind is click, move, down, up,
// type, key, key_down, key_up, scroll, wait or focus; which other fields
// apply depends on it. Modifiers go with key, key_down and key_up, and are
// held around a click, down, up or scroll; what a key_down holds is let go
// by its key_up or at the end of the batch, however it ends.
// Numbers are JSON numbers and must be whole.
type Action struct {
	Kind        ActionKind      `json:"kind"`
	X           *float64        `json:"x,omitempty"`
	Y           *float64        `json:"y,omitempty"`
	Button      Button          `json:"button,omitempty"` // left (default), right, middle
	Double      bool            `json:"double,omitempty"` // a double click counts as two actions
	Text        *string         `json:"text,omitempty"`   // type: any Unicode; \n is Enter, \t is Tab
	Key         string          `json:"key,omitempty"`    // key, key_down, key_up: "enter", "ctrl+shift+t", "a", "shift"
	Modifiers   []string        `json:"modifiers,omitempty"`
	Direction   ScrollDirection `json:"direction,omitempty"` // scroll: up, down, left, right
	Amount      *float64        `json:"amount,omitempty"`    // scroll steps 1-20 (default 3)
	MS          *float64        `json:"ms,omitempty"`        // wait: at most 5000 (default 350)
	Application string          `json:"application,omitempty"`
	URI         string          `json:"uri,omitempty"`
}

// Limits of one agent.act batch.
const (
	MaxActions    = 24   // a double click counts as two
	MaxTypedChars = 1000 // across the batch's type actions
)

// ActParams are a batch: at most MaxActions actions run in order, one batch
// at a time for the whole desktop, then (unless Observe is false) a
// screenshot after SettleMS (default 300).
type ActParams struct {
	// Desktop is the target: empty for the person's display (consent
	// applies: allow_act), or the name of an agent's desktop (desktops
	// enabled; no per-batch consent). One batch at a time per target;
	// batches on different targets run at once.
	Desktop  string   `json:"desktop,omitempty"`
	Actions  []Action `json:"actions"`
	Observe  *bool    `json:"observe,omitempty"`
	SettleMS *float64 `json:"settle_ms,omitempty"`
	// LockTimeoutMS is how long to wait for another batch (default 10000).
	LockTimeoutMS int64 `json:"lock_timeout_ms,omitempty"`
	// Screenshot shapes the observation (format, region, size, path).
	Screenshot *ScreenshotParams `json:"screenshot,omitempty"`
}

// ActResult says how a batch went. When a batch fails part way, the error's
// details are an ActResult too: how many actions ran and why it stopped.
type ActResult struct {
	ActionsRun  int               `json:"actions_run"`
	Outcome     ActOutcome        `json:"outcome"`
	Observation *ScreenshotResult `json:"observation,omitempty"`
	BudgetMS    int64             `json:"budget_ms"`
	DurationMS  float64           `json:"duration_ms"`
}

// Monitor is one output of the screen.
type Monitor struct {
	Index  int    `json:"index"`
	Name   string `json:"name"`
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// ScreenHolder is the caller whose batch holds the screen.
type ScreenHolder struct {
	PID        int       `json:"pid"`
	UID        int       `json:"uid"`
	Executable string    `json:"executable,omitempty"`
	Session    string    `json:"session,omitempty"`
	Since      time.Time `json:"since"`
}

// ScreenResult describes the display and the daemon's use of it.
type ScreenResult struct {
	// Desktop is the desktop described, "" for the person's display.
	Desktop         string        `json:"desktop,omitempty"`
	Display         string        `json:"display"`
	Connected       bool          `json:"connected"`
	Reason          string        `json:"reason,omitempty"` // why not connected
	Width           int           `json:"width,omitempty"`
	Height          int           `json:"height,omitempty"`
	Monitors        []Monitor     `json:"monitors,omitempty"`
	Extensions      []string      `json:"extensions,omitempty"`
	CaptureMethod   string        `json:"capture_method,omitempty"`
	CaptureWhy      string        `json:"capture_why,omitempty"`
	InputWhy        string        `json:"input_why,omitempty"`
	KeyboardLayout  string        `json:"keyboard_layout,omitempty"`
	KeyboardVariant string        `json:"keyboard_variant,omitempty"`
	AllowAct        bool          `json:"allow_act"`
	KillSwitch      string        `json:"kill_switch"`
	Holder          *ScreenHolder `json:"holder,omitempty"`
	Waiting         int           `json:"waiting"`
}
