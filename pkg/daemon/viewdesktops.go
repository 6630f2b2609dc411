package daemon

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/desktop"
	"github.com/agentd/agentd/pkg/view"
)

// viewDesktops is what the view's desktop page shows and takes over, from
// the daemon's desktops (pkg/view's Desktops).
type viewDesktops struct{ d *Daemon }

// RFB is a running Xvnc desktop's RFB socket.
func (v viewDesktops) RFB(ctx context.Context, name string) (string, error) {
	h := v.d.desktops
	if h == nil {
		return "", fmt.Errorf("desktops are not available in this agentd")
	}
	dk, err := h.mgr.Get(name)
	if err != nil {
		return "", err
	}
	if dk.Status != desktop.StatusRunning {
		return "", fmt.Errorf("desktop %q is %s (%s): only a running desktop can be watched", name, dk.Status, dk.Reason)
	}
	if dk.RFB == "" {
		return "", fmt.Errorf("desktop %q runs on Xvfb, which serves no RFB, so the page cannot show it; desktops made with Xvnc can be watched (install the Debian package tigervnc-standalone-server, then agentctl desktop new NAME --server xvnc)", name)
	}
	return dk.RFB, nil
}

// TakeOver holds agents' batches on the desktop off until release: the
// desktop's Screen refuses them busy, naming holder.
func (v viewDesktops) TakeOver(ctx context.Context, name, holder string) (func(), error) {
	if !v.d.live.Load().Desktops {
		// Agents cannot act on desktops at all: nothing to hold off.
		return func() {}, nil
	}
	scr, err := v.d.screenOf(name)
	if err != nil {
		return nil, err
	}
	cs, ok := scr.(*capture.Screen)
	if !ok {
		return nil, fmt.Errorf("desktop %q has no screen to take over here", name)
	}
	return cs.TakeOver(holder)
}

// Watch holds the idle sweep off the desktop while a page watches it.
func (v viewDesktops) Watch(name string) func() {
	if v.d.desktops == nil {
		return func() {}
	}
	return v.d.desktops.watch(name)
}

// List is every desktop as the list page shows it.
func (v viewDesktops) List(ctx context.Context) ([]view.DeskRow, error) {
	h := v.d.desktops
	if h == nil {
		return nil, nil
	}
	var rows []view.DeskRow
	for _, dk := range h.mgr.List() {
		r := view.DeskRow{Name: dk.Name, Status: string(dk.Status), Server: dk.Kind(), Width: dk.Width, Height: dk.Height,
			Session: dk.Session, CreatedAt: dk.CreatedAt}
		switch {
		case dk.Status != desktop.StatusRunning:
			r.Why = "not running"
		case dk.RFB == "":
			r.Why = "Xvfb serves no RFB: make desktops with Xvnc (tigervnc-standalone-server) to watch them"
		default:
			r.Watchable = true
		}
		rows = append(rows, r)
	}
	return rows, nil
}
