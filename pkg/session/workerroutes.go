package session

import (
	"context"

	"github.com/agentd/agentd/internal/rpc"
)

// workerRoute serves one worker method on a worker connection.
type workerRoute func(w *worker, ctx context.Context, sc *rpc.Conn, req *rpc.Request) (any, error)

// withParams is the route of a method whose params decode into P
// (decodeParams: absent params are P's zero value, bad ones ErrInvalid).
func withParams[P any](f func(w *worker, ctx context.Context, p P) (any, error)) workerRoute {
	return func(w *worker, ctx context.Context, _ *rpc.Conn, req *rpc.Request) (any, error) {
		var p P
		if err := decodeParams(req, &p); err != nil {
			return nil, err
		}
		return f(w, ctx, p)
	}
}

// workerRoutes are the worker's methods, the other end of the Manager's
// typed calls (workercalls.go); a method is added here, there and in the
// method names (types.go).
var workerRoutes = map[string]workerRoute{
	mHello: func(w *worker, _ context.Context, _ *rpc.Conn, _ *rpc.Request) (any, error) {
		st := w.liveStatus()
		st.TokenDigest = w.tokenDigest
		return st, nil
	},
	mStatus: func(w *worker, _ context.Context, _ *rpc.Conn, _ *rpc.Request) (any, error) {
		st := w.liveStatus()
		if st.Status == StatusRunning {
			st.Input = w.describeReadiness(st.Events)
		}
		return st, nil
	},
	mApprove: withParams(func(w *worker, ctx context.Context, p approveParams) (any, error) {
		return w.approve(ctx, p)
	}),
	mHook: withParams(func(w *worker, ctx context.Context, p hookParams) (any, error) {
		return w.hook(ctx, p)
	}),
	mSend: withParams(func(w *worker, ctx context.Context, p sendParams) (any, error) {
		if err := w.requireRunning("send"); err != nil {
			return nil, err
		}
		return nil, w.writeInput(ctx, p.Data, true)
	}),
	mAsk: withParams(func(w *worker, ctx context.Context, p askParams) (any, error) {
		return w.ask(ctx, p)
	}),
	mCancel: withParams(func(w *worker, _ context.Context, p cancelParams) (any, error) {
		w.cancelAsk(p.ID)
		return nil, nil
	}),
	mRecord: withParams(func(w *worker, _ context.Context, p recordParams) (any, error) {
		w.recordChannelAsk(p)
		return nil, nil
	}),
	mMark: withParams(func(w *worker, _ context.Context, p markParams) (any, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.appendLocked(&Event{Type: EventMarker, Text: p.Text, Reason: p.Reason})
		return nil, nil
	}),
	mWait: withParams(func(w *worker, ctx context.Context, p waitParams) (any, error) {
		return w.wait(ctx, p)
	}),
	mSnapshot: func(w *worker, _ context.Context, _ *rpc.Conn, _ *rpc.Request) (any, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.screenLocked().Snapshot(w.spec.Name, w.elog.Seq()), nil
	},
	mResize: withParams(func(w *worker, _ context.Context, p resizeParams) (any, error) {
		return nil, w.resize(p.Cols, p.Rows)
	}),
	mStop: withParams(func(w *worker, ctx context.Context, p stopParams) (any, error) {
		return w.stop(ctx, p)
	}),
	mAttach: func(w *worker, ctx context.Context, sc *rpc.Conn, _ *rpc.Request) (any, error) {
		return nil, w.attach(ctx, sc)
	},
	mAttachStream: func(w *worker, _ context.Context, _ *rpc.Conn, _ *rpc.Request) (any, error) {
		return w.attachStream()
	},
}
