package capture

import (
	"image"
	"strconv"
	"time"
)

// Caller says who asked for a batch; the daemon fills it from the peer's
// credentials. It is recorded in the audit log and shown in Info while the
// caller holds the screen.
type Caller struct {
	PID        int    `json:"pid"`
	UID        int    `json:"uid"`
	Executable string `json:"executable,omitempty"`
	Session    string `json:"session,omitempty"`
}

// String describes the caller for people: "pid 42 (/usr/bin/claude), session w1".
func (c Caller) String() string {
	s := "pid " + strconv.Itoa(c.PID)
	if c.Executable != "" {
		s += " (" + c.Executable + ")"
	}
	if c.Session != "" {
		s += ", session " + c.Session
	}
	return s
}

// Monitor is one output of the screen, in screen pixels.
type Monitor struct {
	Index  int    `json:"index"`
	Name   string `json:"name"`
	X      int    `json:"x"`
	Y      int    `json:"y"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// Rect returns the monitor's rectangle on the screen.
func (m Monitor) Rect() image.Rectangle { return image.Rect(m.X, m.Y, m.X+m.Width, m.Y+m.Height) }

// Holder is the batch that holds the screen.
type Holder struct {
	Caller Caller    `json:"caller"`
	Since  time.Time `json:"since"`
}

// Info describes the screen and the package's state.
type Info struct {
	// Display is the DISPLAY value the package uses ("" when none).
	Display string `json:"display"`
	// Desktop is the agent's desktop this is, "" for the person's display.
	Desktop string `json:"desktop,omitempty"`
	// Connected tells whether there is a live X connection; when false,
	// Reason says why.
	Connected bool   `json:"connected"`
	Reason    string `json:"reason,omitempty"`
	Width     int    `json:"width,omitempty"`
	Height    int    `json:"height,omitempty"`
	// Monitors are the RandR outputs, or the whole screen.
	Monitors []Monitor `json:"monitors,omitempty"`
	// Extensions in use, among MIT-SHM, XTEST, XKEYBOARD, RANDR.
	Extensions []string `json:"extensions,omitempty"`
	// CaptureMethod is MethodSHM or MethodGetImage; CaptureWhy explains.
	CaptureMethod string `json:"capture_method,omitempty"`
	CaptureWhy    string `json:"capture_why,omitempty"`
	// InputWhy explains whether input works (XTEST).
	InputWhy string `json:"input_why,omitempty"`
	// KeyboardLayout and KeyboardVariant come from _XKB_RULES_NAMES.
	KeyboardLayout  string `json:"keyboard_layout,omitempty"`
	KeyboardVariant string `json:"keyboard_variant,omitempty"`
	// AllowAct tells whether Act may run.
	AllowAct bool `json:"allow_act"`
	// KillSwitch describes the corner kill switch: "armed", or "tripped"
	// while the pointer rests in a corner.
	KillSwitch string `json:"kill_switch"`
	// Holder is the batch holding the screen, nil when idle.
	Holder *Holder `json:"holder,omitempty"`
	// Waiting is the number of batches queued for the screen.
	Waiting int `json:"waiting"`
}
