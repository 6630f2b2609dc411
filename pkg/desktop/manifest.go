package desktop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Status is a desktop's state.
type Status string

// Statuses. A desktop is starting until its server reported ready, then
// running; dead when its server died (or its group was killed), with the
// reason. Removed desktops have no manifest.
const (
	StatusStarting Status = "starting"
	StatusRunning  Status = "running"
	StatusDead     Status = "dead"
	// StatusUnresponsive is never written: List reports it for a running
	// desktop whose server accepts connections but does not answer.
	StatusUnresponsive Status = "unresponsive"
)

// Desktop is one desktop as its manifest records it.
type Desktop struct {
	Name    string `json:"name"`
	Display string `json:"display"` // ":1003"
	Number  int    `json:"number"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	WM      string `json:"wm"`
	Layout  string `json:"layout"`
	// ServerKind is the X server the desktop runs on: xvfb or xvnc (a
	// manifest from before Xvnc was offered has none: xvfb).
	ServerKind string `json:"server_kind,omitempty"`
	// RFB is the Unix socket (mode 0600, in a 0700 directory) on which an
	// Xvnc desktop serves RFB; "" for Xvfb.
	RFB string `json:"rfb,omitempty"`
	// Control is the worker's control socket (mode 0600, in the 0700
	// runtime directory): the Manager asks the worker for what must
	// outlive agentd, such as owning the clipboard. "" for a desktop made
	// before it existed.
	Control string `json:"control,omitempty"`
	// Authority is the cookie file (XAUTHORITY for the desktop's programs).
	Authority string `json:"authority"`
	// Bus is the desktop's D-Bus session bus address, "" when dbus-daemon
	// is not installed.
	Bus    string `json:"bus,omitempty"`
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Worker, Server, WindowManager and DBus are the group's processes.
	Worker        member `json:"worker"`
	Server        member `json:"server"`
	WindowManager member `json:"window_manager,omitzero"`
	// WMPending is true while the window manager waits for the desktop's
	// first window to start (wm.go); see WMState.
	WMPending bool `json:"wm_pending,omitempty"`
	// WMStarting is true from the window manager's start until it says it
	// has adopted the windows shown (wm.go); input batches wait for it.
	WMStarting bool      `json:"wm_starting,omitempty"`
	DBus       member    `json:"dbus,omitzero"`
	CreatedAt  time.Time `json:"created_at"`
	// Session is the session the desktop was made for (spawn --desktop
	// new); it goes away with it unless Keep.
	Session string `json:"session,omitempty"`
	Keep    bool   `json:"keep,omitempty"`
}

// Env is what a program started on the desktop gets: set these, and unset
// the keys of Unset (a Wayland display would draw GTK and Qt programs on
// the person's screen).
func (d *Desktop) Env() (set, unset []string) {
	set = []string{"DISPLAY=" + d.Display, "XAUTHORITY=" + d.Authority, "GDK_BACKEND=x11", "QT_QPA_PLATFORM=xcb",
		"XDG_SESSION_TYPE=x11", "AGENTD_DESKTOP=" + d.Name}
	if d.Bus != "" {
		set = append(set, "DBUS_SESSION_BUS_ADDRESS="+d.Bus)
	}
	return set, []string{"WAYLAND_DISPLAY"}
}

// Kind is the desktop's X server, xvfb for a manifest that names none.
func (d *Desktop) Kind() string {
	if d.ServerKind == "" {
		return ServerXvfb
	}
	return d.ServerKind
}

const manifestName = "manifest.json"

func writeManifest(dir string, d *Desktop) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".manifest-*.tmp")
	if err != nil {
		return fmt.Errorf("write desktop manifest: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, manifestName))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write desktop manifest: %w", err)
	}
	if f, err := os.Open(dir); err == nil {
		f.Sync()
		f.Close()
	}
	return nil
}

func readManifest(dir string) (*Desktop, error) {
	f, err := os.OpenFile(filepath.Join(dir, manifestName), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var d Desktop
	if err := json.NewDecoder(f).Decode(&d); err != nil {
		return nil, fmt.Errorf("desktop manifest %s: %w", f.Name(), err)
	}
	return &d, nil
}
