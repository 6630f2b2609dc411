package session

import (
	"context"
	"time"
)

// The Manager's calls to a session's worker, one method each: its request
// and result types, its deadline beyond its caller's, and what its result
// means for the session (callSpec). Each goes through Manager.call (find
// or attach the worker, bound the call by the worker's health, translate
// its errors); the worker serves it by workerRoutes. Adding a worker call
// is a method name (types.go), a method here and a route there. The
// heartbeat's status (statusOf), hello (attach), stop (Stop, with its own
// force path) and cancel (cancelAsk) call the worker directly.

// callSpec is what Manager.call needs to know of one worker call.
type callSpec struct {
	method string // the worker method
	op     string // what the call is, in errors ("send", "record an ask")
	// timeout is the call's deadline beyond its caller's: 0 for asks and
	// waits, whose deadlines their callers give and the worker keeps.
	timeout time.Duration
	// ended, when set, says of the result that the program ended: what List
	// shows must then say so before the caller, told so, looks.
	ended func() bool
	// abandoned, when set, runs when the worker stops answering during
	// the call.
	abandoned func(h *handle)
}

// askWorker runs an ask on name's worker.
func (m *Manager) askWorker(ctx context.Context, name string, p askParams) (*AskResult, error) {
	var res AskResult
	err := m.call(ctx, name, callSpec{method: mAsk, op: "ask",
		ended: func() bool { return res.Reason == ReasonExited },
		// An ask the worker still holds would keep the session's ask lock
		// once it resumes: cancel it then.
		abandoned: func(h *handle) { h.afterResume(func() { m.cancelAsk(name, p.ID) }) },
	}, p, &res)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// waitWorker runs a wait on name's worker.
func (m *Manager) waitWorker(ctx context.Context, req WaitRequest) (*WaitResult, error) {
	var res WaitResult
	err := m.call(ctx, req.Name, callSpec{method: mWait, op: "wait",
		ended: func() bool { return res.Reason == ReasonExited },
	}, waitParams(req), &res)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// sendWorker types data into name's program.
func (m *Manager) sendWorker(ctx context.Context, name string, p sendParams) error {
	return m.call(ctx, name, callSpec{method: mSend, op: "send", timeout: inputCallTimeout}, p, nil)
}

// approveWorker answers name's agent prompt (approve or deny).
func (m *Manager) approveWorker(ctx context.Context, name string, p approveParams) (*ApproveResult, error) {
	var r ApproveResult
	if err := m.call(ctx, name, callSpec{method: mApprove, op: p.Role, timeout: inputCallTimeout}, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// hookWorker hands an agent CLI's hook call to name's worker (hooks.go).
func (m *Manager) hookWorker(ctx context.Context, name string, p hookParams) (*HookResult, error) {
	var r HookResult
	if err := m.call(ctx, name, callSpec{method: mHook, op: "hook", timeout: statusCallTimeout}, p, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// recordWorker records an ask answered through a channel.
func (m *Manager) recordWorker(ctx context.Context, name string, p recordParams) error {
	return m.call(ctx, name, callSpec{method: mRecord, op: "record an ask", timeout: inputCallTimeout}, p, nil)
}

// snapshotWorker returns name's screen from its worker.
func (m *Manager) snapshotWorker(ctx context.Context, name string) (*Snapshot, error) {
	var s Snapshot
	if err := m.call(ctx, name, callSpec{method: mSnapshot, op: "snapshot", timeout: statusCallTimeout}, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// resizeWorker changes name's terminal size.
func (m *Manager) resizeWorker(ctx context.Context, name string, p resizeParams) error {
	return m.call(ctx, name, callSpec{method: mResize, op: "resize", timeout: statusCallTimeout}, p, nil)
}
