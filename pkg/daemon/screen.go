package daemon

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/wire"
)

// Screen is what the daemon needs from the screen component:
// *capture.Screen, or a fake in tests.
type Screen interface {
	Info(ctx context.Context) capture.Info
	Screenshot(ctx context.Context, req capture.ScreenshotRequest) (*capture.Shot, error)
	Act(ctx context.Context, req capture.ActRequest) (*capture.ActResult, error)
	ForgetCaller(key string)
	SetAllowAct(allow bool)
	SetLockTimeout(d time.Duration)
	SetRecordScreen(on bool) error
	WriteRecord(req capture.RecordRequest) (*capture.RecordResult, error)
}

func (d *Daemon) screenRoutes() []Route {
	return []Route{
		{Method: wire.MethodScreenshot, Handle: d.screenshot},
		{Method: wire.MethodAct, Mutates: true, Handle: d.act},
		{Method: wire.MethodScreen, Handle: d.screenInfo},
		{Method: wire.MethodRecordScreen, Handle: d.recordScreen},
	}
}

func (d *Daemon) recordScreen(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.RecordScreenParams](call)
	if err != nil {
		return nil, err
	}
	scr, err := d.screenOf(p.Desktop)
	if err != nil {
		return nil, err
	}
	r, err := scr.WriteRecord(capture.RecordRequest{Dir: p.Dir, Since: p.Since, Until: p.Until, Overwrite: p.Overwrite})
	if err != nil {
		return nil, err
	}
	return &wire.RecordScreenResult{Dir: r.Dir, Batches: r.Batches, Images: r.Images, Skipped: r.Skipped}, nil
}

func shotRequest(p *wire.ScreenshotParams) capture.ScreenshotRequest {
	if p == nil {
		return capture.ScreenshotRequest{MaxInlineBytes: wire.MaxInlineImageBytes}
	}
	req := capture.ScreenshotRequest{Format: p.Format, Quality: p.Quality, Monitor: p.Monitor, MaxWidth: p.MaxWidth,
		Path: p.Path, Overwrite: p.Overwrite, MaxInlineBytes: wire.MaxInlineImageBytes}
	if p.Region != nil {
		req.Region = &capture.Region{X: p.Region.X, Y: p.Region.Y, Width: p.Region.Width, Height: p.Region.Height}
	}
	return req
}

func shotResult(s *capture.Shot) *wire.ScreenshotResult {
	if s == nil {
		return nil
	}
	return &wire.ScreenshotResult{
		FrameID: s.FrameID, Format: s.Format, Width: s.Width, Height: s.Height, Image: s.Data, Path: s.Path, Bytes: s.Bytes,
		Area: wire.Region{X: s.Area.X, Y: s.Area.Y, Width: s.Area.Width, Height: s.Area.Height}, Scale: s.Scale,
		CapturedAt: s.CapturedAt, Pointer: wire.Point{X: s.Pointer.X, Y: s.Pointer.Y}, ActiveWindow: s.ActiveWindow,
		Method: s.Method, CaptureMS: millis(s.CaptureDuration), EncodeMS: millis(s.EncodeDuration), Unchanged: s.Unchanged,
	}
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (d *Daemon) screenshot(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ScreenshotParams](call)
	if err != nil {
		return nil, err
	}
	scr, err := d.screenOf(p.Desktop)
	if err != nil {
		return nil, err
	}
	shot, err := scr.Screenshot(ctx, shotRequest(&p))
	if err != nil {
		return nil, err
	}
	return shotResult(shot), nil
}

func (d *Daemon) act(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ActParams](call)
	if err != nil {
		return nil, err
	}
	lock, err := msDuration(p.LockTimeoutMS, "lock_timeout_ms")
	if err != nil {
		return nil, err
	}
	if p.Screenshot != nil && p.Screenshot.Desktop != "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "screenshot.desktop is not used by agent.act: the batch's desktop is the observation's; give desktop on the batch")
	}
	scr, dk, err := d.desktopScreen(p.Desktop)
	if err != nil {
		return nil, err
	}
	if dk != nil {
		d.awaitWindowManager(ctx, dk)
	}
	req := capture.ActRequest{
		Actions: make([]capture.RawAction, len(p.Actions)), Observe: p.Observe, SettleMS: p.SettleMS,
		Shot: shotRequest(p.Screenshot), LockTimeout: lock,
		Caller: capture.Caller{PID: call.Conn.Peer.PID, UID: call.Conn.Peer.UID, Executable: call.Conn.Peer.Exe,
			Session: call.Conn.agentSession()},
	}
	req.CallerKey = callerKey(call.Conn, req.Caller.Session)
	for i, a := range p.Actions {
		req.Actions[i] = capture.RawAction{Kind: string(a.Kind), X: a.X, Y: a.Y, Button: string(a.Button), Double: a.Double, Text: a.Text,
			Key: a.Key, Modifiers: a.Modifiers, Direction: string(a.Direction), Amount: a.Amount, MS: a.MS,
			Application: a.Application, URI: a.URI}
	}
	res, err := scr.Act(ctx, req)
	var out *wire.ActResult
	if res != nil {
		out = &wire.ActResult{ActionsRun: res.ActionsRun, Outcome: wire.ActOutcome(res.Outcome), Observation: shotResult(res.Observation),
			BudgetMS: res.Budget.Milliseconds(), DurationMS: millis(res.Duration)}
	}
	if err != nil {
		we := toWireError(err)
		if out != nil {
			we = we.WithDetails(out)
		}
		return nil, we
	}
	return out, nil
}

// callerKey identifies the caller for "unchanged" observations: the agent's
// session when it runs in one, so an agent calling agentctl once per batch
// still hears "unchanged"; else the connection (forgotten when it ends, see
// serveConn).
func callerKey(c *Conn, session string) string {
	if session != "" {
		return "session-" + session
	}
	return connCallerKey(c.ID)
}

func connCallerKey(id uint64) string { return "conn-" + strconv.FormatUint(id, 10) }

func (d *Daemon) screenInfo(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ScreenParams](call)
	if err != nil {
		return nil, err
	}
	scr, err := d.screenOf(p.Desktop)
	if err != nil {
		return nil, err
	}
	return screenResult(scr.Info(ctx)), nil
}

// screenResult is agent.screen's answer from the screen's info.
func screenResult(i capture.Info) *wire.ScreenResult {
	r := &wire.ScreenResult{Desktop: i.Desktop, Display: i.Display, Connected: i.Connected, Reason: i.Reason, Width: i.Width, Height: i.Height,
		Extensions: i.Extensions, CaptureMethod: i.CaptureMethod, CaptureWhy: i.CaptureWhy, InputWhy: i.InputWhy,
		KeyboardLayout: i.KeyboardLayout, KeyboardVariant: i.KeyboardVariant, AllowAct: i.AllowAct, KillSwitch: i.KillSwitch,
		Waiting: i.Waiting}
	for _, m := range i.Monitors {
		r.Monitors = append(r.Monitors, wire.Monitor{Index: m.Index, Name: m.Name, X: m.X, Y: m.Y, Width: m.Width, Height: m.Height})
	}
	if h := i.Holder; h != nil {
		r.Holder = &wire.ScreenHolder{PID: h.Caller.PID, UID: h.Caller.UID, Executable: h.Caller.Executable, Session: h.Caller.Session, Since: h.Since}
	}
	return r
}

// agentSession is the agentd session the connection's peer runs in, or "".
// It is read from the peer's environment once per connection, not once per
// batch: reading another process's environ walks its memory (a fifth of
// act's own time for a 24-move batch), and the variable is the one its
// worker set when the process started.
func (c *Conn) agentSession() string {
	c.peerSessionOnce.Do(func() { c.peerSession = sessionOfProcess(c.Peer.PID) })
	return c.peerSession
}

// sessionOfProcess returns the agentd session a process runs in, from the
// AGENTD_SESSION its worker put in its environment, or "".
func sessionOfProcess(pid int) string {
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("AGENTD_SESSION=")); ok {
			return string(v)
		}
	}
	return ""
}
