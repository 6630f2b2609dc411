package wire

import (
	"context"
	"net"

	"github.com/agentd/agentd/internal/rpc"
)

// Restart starts an ended session's program again.
func (c *Client) Restart(ctx context.Context, p RestartParams) (*SessionStatus, error) {
	return call[SessionStatus](ctx, c, MethodRestart, p)
}

// Spawn starts a session.
func (c *Client) Spawn(ctx context.Context, p SpawnParams) (*SessionStatus, error) {
	return call[SessionStatus](ctx, c, MethodSpawn, p)
}

// Ask delivers a question to a session and waits for the answer. A
// deadline that passes is an *Error with code timeout whose Details decode
// into TimeoutDetails.
func (c *Client) Ask(ctx context.Context, p AskParams) (*AskResult, error) {
	return call[AskResult](ctx, c, MethodAsk, p)
}

// List lists sessions.
func (c *Client) List(ctx context.Context, p ListParams) (*ListResult, error) {
	return call[ListResult](ctx, c, MethodList, p)
}

// Status describes one session.
func (c *Client) Status(ctx context.Context, name string) (*SessionStatus, error) {
	return call[SessionStatus](ctx, c, MethodStatus, NameParams{Name: name})
}

// Stop ends a session's program and says how it ended.
func (c *Client) Stop(ctx context.Context, p StopParams) (*ExitResult, error) {
	return call[ExitResult](ctx, c, MethodStop, p)
}

// Rm removes an ended session (a running one too with Force).
func (c *Client) Rm(ctx context.Context, p RmParams) (*RmResult, error) {
	return call[RmResult](ctx, c, MethodRm, p)
}

// Reconcile re-attaches to live workers and marks dead sessions.
func (c *Client) Reconcile(ctx context.Context) (*ReconcileResult, error) {
	return call[ReconcileResult](ctx, c, MethodReconcile, nil)
}

// Logs reads a session's event log. With Follow, events arrive through the
// client's OnNotification as NotifyLogEvent and Logs returns when the
// session ends or ctx is cancelled.
func (c *Client) Logs(ctx context.Context, p LogsParams) (*LogsResult, error) {
	return call[LogsResult](ctx, c, MethodLogs, p)
}

// Send delivers text or keys to a session without waiting.
func (c *Client) Send(ctx context.Context, p SendParams) error {
	return c.Call(ctx, MethodSend, p, nil)
}

// Snapshot returns a session's screen.
func (c *Client) Snapshot(ctx context.Context, name string) (*SnapshotResult, error) {
	return call[SnapshotResult](ctx, c, MethodSnapshot, NameParams{Name: name})
}

// Wait returns when the condition holds on a session.
func (c *Client) Wait(ctx context.Context, p WaitParams) (*WaitResult, error) {
	return call[WaitResult](ctx, c, MethodWait, p)
}

// Resize changes a session's terminal size.
func (c *Client) Resize(ctx context.Context, p ResizeParams) error {
	return c.Call(ctx, MethodResize, p, nil)
}

// DialAttach opens a new connection to the daemon at socket, attaches it to
// a session and returns it as a raw stream: writes are keyboard input (as
// attach frames when p.FramedInput: write through NewAttachWriter), reads
// are the program's output (see "Raw streaming"). The caller closes it to
// detach.
func DialAttach(ctx context.Context, socket string, p AttachParams) (net.Conn, *AttachResult, error) {
	if err := CheckSocketDir(socket); err != nil {
		return nil, nil, &UnreachableError{Socket: socket, Err: err}
	}
	conn, raw, err := rpc.DialUpgrade(ctx, socket, MethodAttach, p)
	if err != nil {
		return nil, nil, dialError(err)
	}
	var r AttachResult
	if err := decodeResult(raw, &r); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, &r, nil
}

// Screenshot takes a screenshot.
func (c *Client) Screenshot(ctx context.Context, p ScreenshotParams) (*ScreenshotResult, error) {
	return call[ScreenshotResult](ctx, c, MethodScreenshot, p)
}

// Act runs an input batch. A batch stopped part way is an *Error whose
// Details decode into an ActResult.
func (c *Client) Act(ctx context.Context, p ActParams) (*ActResult, error) {
	return call[ActResult](ctx, c, MethodAct, p)
}

// RecordScreen writes the screen record (see MethodRecordScreen).
func (c *Client) RecordScreen(ctx context.Context, p RecordScreenParams) (*RecordScreenResult, error) {
	return call[RecordScreenResult](ctx, c, MethodRecordScreen, p)
}

// Screen describes the display.
func (c *Client) Screen(ctx context.Context) (*ScreenResult, error) {
	return call[ScreenResult](ctx, c, MethodScreen, nil)
}
