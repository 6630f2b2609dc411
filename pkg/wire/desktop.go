package wire

import (
	"context"
	"time"
)

// Desktop methods (agent.*): the agents' own X displays. A desktop is a
// private X server (Xvnc when installed, else Xvfb) with an optional
// window manager that agentd owns; the screen methods take its name as
// their "desktop" target.
const (
	// MethodDesktopNew starts a desktop and answers once it can be
	// screenshot (agentctl desktop new).
	MethodDesktopNew = "agent.desktop_new"
	// MethodDesktopList lists the desktops, judged by their X sockets.
	MethodDesktopList = "agent.desktop_ls"
	// MethodDesktopRm ends a desktop's processes and removes its files;
	// refused (busy) while a batch runs on it unless Force.
	MethodDesktopRm = "agent.desktop_rm"
	// MethodDesktopClip reads or sets a desktop's clipboard.
	MethodDesktopClip = "agent.desktop_clip"
	// MethodDesktopResize changes an Xvnc desktop's screen size through
	// RandR (agentctl desktop resize).
	MethodDesktopResize = "agent.desktop_resize"
)

// DesktopStatus is a desktop's state: running, dead (its server died; it is
// listed until removed, with the reason), unresponsive (its server accepts
// connections but does not answer), starting.
type DesktopStatus string

// Desktop statuses.
const (
	DesktopStarting     DesktopStatus = "starting"
	DesktopRunning      DesktopStatus = "running"
	DesktopDead         DesktopStatus = "dead"
	DesktopUnresponsive DesktopStatus = "unresponsive"
)

// Window managers a desktop can run.
const (
	WMOpenbox = "openbox"
	WMNone    = "none"
)

// X servers a desktop can run on: Xvnc (TigerVNC: framebuffer, RandR
// and RFB in one process) or Xvfb.
const (
	ServerXvfb = "xvfb"
	ServerXvnc = "xvnc"
)

// DesktopNewParams ask for a desktop. Name empty picks "desktop-N"; Size
// is "WxH" with each side 320-7680 (default 1280x800); WM is openbox (the
// default) or none; Layout is an XKB keyboard layout (default us); Server
// is xvnc or xvfb (default: Xvnc when installed, else Xvfb).
type DesktopNewParams struct {
	Name   string `json:"name,omitempty"`
	Size   string `json:"size,omitempty"`
	WM     string `json:"wm,omitempty"`
	Layout string `json:"layout,omitempty"`
	Server string `json:"server,omitempty"`
}

// DesktopRow is one desktop.
type DesktopRow struct {
	Name    string        `json:"name"`
	Status  DesktopStatus `json:"status"`
	Reason  string        `json:"reason,omitempty"`
	Display string        `json:"display"`
	Width   int           `json:"width"`
	Height  int           `json:"height"`
	WM      string        `json:"wm"`
	// WMState says whether the window manager runs: "none", "openbox",
	// "openbox (starts with the first window)" (an idle desktop runs none
	// until a window appears), "openbox (starting)" (adopting the windows
	// shown; batches wait for it) or "openbox (not running)" (Reason says
	// why).
	WMState string `json:"wm_state,omitempty"`
	Layout  string `json:"layout"`
	// Server is the desktop's X server: xvnc or xvfb.
	Server string `json:"server"`
	// RFB is the Unix socket (mode 0600) on which an Xvnc desktop serves
	// RFB, for a viewer; "" for Xvfb.
	RFB string `json:"rfb,omitempty"`
	// Authority is the desktop's cookie file, what XAUTHORITY must name
	// for a program to open windows on it.
	Authority string    `json:"authority,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Session is the session the desktop was made for (spawn --desktop
	// new): it goes away with the session unless Keep.
	Session   string `json:"session,omitempty"`
	Keep      bool   `json:"keep,omitempty"`
	WorkerPID int    `json:"worker_pid,omitempty"`
	ServerPID int    `json:"server_pid,omitempty"`
	// Acting is true while a batch runs on the desktop.
	Acting bool `json:"acting,omitempty"`
}

// DesktopListResult lists the desktops, oldest first.
type DesktopListResult struct {
	Desktops []DesktopRow `json:"desktops"`
}

// DesktopRmParams name a desktop to remove. Force removes it even while
// a batch runs on it (the batch fails as the server goes).
type DesktopRmParams struct {
	Name  string `json:"name"`
	Force bool   `json:"force,omitempty"`
}

// DesktopResizeParams resize a desktop's screen to Size ("WxH", each side
// 320-7680). Only Xvnc desktops can be resized; the answer is the desktop
// with the size its server reports afterwards.
type DesktopResizeParams struct {
	Name string `json:"name"`
	Size string `json:"size"`
}

// MaxClipBytes bounds a desktop's clipboard text, either way: enough for
// any text an agent pastes, small enough to pass in one frame.
const MaxClipBytes = 64 << 10

// Clipboard operations.
const (
	ClipGet = "get"
	ClipSet = "set"
)

// DesktopClipParams read (Op get, the default) or set (Op set, with Text)
// the desktop's CLIPBOARD selection as UTF-8 text of at most MaxClipBytes.
// The audit log records the length only.
type DesktopClipParams struct {
	Name string  `json:"name"`
	Op   string  `json:"op,omitempty"`
	Text *string `json:"text,omitempty"`
}

// DesktopClipResult is the clipboard's text (get) and its length in bytes.
type DesktopClipResult struct {
	Text  string `json:"text,omitempty"`
	Bytes int    `json:"bytes"`
}

// ScreenParams name the target of agent.screen: Desktop empty is the
// person's display.
type ScreenParams struct {
	Desktop string `json:"desktop,omitempty"`
}

// DesktopNew starts a desktop.
func (c *Client) DesktopNew(ctx context.Context, p DesktopNewParams) (*DesktopRow, error) {
	return call[DesktopRow](ctx, c, MethodDesktopNew, p)
}

// DesktopList lists the desktops.
func (c *Client) DesktopList(ctx context.Context) (*DesktopListResult, error) {
	return call[DesktopListResult](ctx, c, MethodDesktopList, nil)
}

// DesktopRm removes a desktop.
func (c *Client) DesktopRm(ctx context.Context, p DesktopRmParams) error {
	return c.Call(ctx, MethodDesktopRm, p, nil)
}

// DesktopResize resizes an Xvnc desktop's screen.
func (c *Client) DesktopResize(ctx context.Context, p DesktopResizeParams) (*DesktopRow, error) {
	return call[DesktopRow](ctx, c, MethodDesktopResize, p)
}

// DesktopClip reads or sets a desktop's clipboard.
func (c *Client) DesktopClip(ctx context.Context, p DesktopClipParams) (*DesktopClipResult, error) {
	return call[DesktopClipResult](ctx, c, MethodDesktopClip, p)
}

// ScreenOf describes a target's display: the person's (p.Desktop empty)
// or a desktop's.
func (c *Client) ScreenOf(ctx context.Context, p ScreenParams) (*ScreenResult, error) {
	return call[ScreenResult](ctx, c, MethodScreen, p)
}
