package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// nullSessions accepts everything and answers empty results: under it, an
// internal answer can only be the daemon's own fault (decoding, checking,
// converting), which is what FuzzParams looks for.
type nullSessions struct{}

func (nullSessions) Spawn(context.Context, session.SpawnRequest) (*session.Info, error) {
	return &session.Info{}, nil
}
func (nullSessions) Status(context.Context, string) (*session.Info, error) {
	return &session.Info{}, nil
}
func (nullSessions) List(context.Context, session.ListRequest) ([]session.ListEntry, error) {
	return nil, nil
}
func (nullSessions) Stop(context.Context, session.StopRequest) (*session.ExitInfo, error) {
	return &session.ExitInfo{}, nil
}
func (nullSessions) Remove(context.Context, string, bool) error { return nil }
func (nullSessions) Ask(context.Context, session.AskRequest) (*session.AskResult, error) {
	return &session.AskResult{}, nil
}
func (nullSessions) RecordAsk(context.Context, string, string, string, string) error { return nil }
func (nullSessions) Send(context.Context, session.SendRequest) error                 { return nil }
func (nullSessions) Snapshot(context.Context, string) (*session.Snapshot, error) {
	return &session.Snapshot{}, nil
}
func (nullSessions) Wait(context.Context, session.WaitRequest) (*session.WaitResult, error) {
	return &session.WaitResult{}, nil
}
func (nullSessions) Resize(context.Context, string, int, int) error { return nil }
func (nullSessions) SetTimeouts(session.Timeouts)                   {}
func (nullSessions) Logs(context.Context, session.LogsRequest, func(session.Event) error) error {
	return nil
}
func (nullSessions) Reconcile(context.Context) (*session.ReconcileReport, error) {
	return &session.ReconcileReport{}, nil
}
func (nullSessions) Attach(context.Context, string, io.ReadWriter) error { return nil }
func (nullSessions) Vouch(context.Context, string, int, string) (bool, string, error) {
	return true, "", nil
}
func (nullSessions) Hook(context.Context, session.HookRequest) (*session.HookResult, error) {
	return &session.HookResult{}, nil
}
func (nullSessions) Approve(context.Context, string, bool, string) (*session.ApproveResult, error) {
	return &session.ApproveResult{}, nil
}

func (nullSessions) Diff(context.Context, string) (*session.WorktreeDiff, error) {
	return &session.WorktreeDiff{}, nil
}
func (nullSessions) Restart(context.Context, session.RestartRequest) (*session.Info, error) {
	return &session.Info{}, nil
}
func (nullSessions) Subscribe(context.Context, session.SubscribeRequest, func(session.StateChange) error) error {
	return nil
}

// nullScreen is a screen that does everything and shows nothing.
type nullScreen struct{}

func (nullScreen) Info(context.Context) capture.Info { return capture.Info{} }
func (nullScreen) Screenshot(context.Context, capture.ScreenshotRequest) (*capture.Shot, error) {
	return &capture.Shot{}, nil
}
func (nullScreen) Act(context.Context, capture.ActRequest) (*capture.ActResult, error) {
	return &capture.ActResult{}, nil
}
func (nullScreen) ForgetCaller(string)          {}
func (nullScreen) SetAllowAct(bool)             {}
func (nullScreen) SetLockTimeout(time.Duration) {}
func (nullScreen) SetRecordScreen(bool) error   { return nil }
func (nullScreen) WriteRecord(capture.RecordRequest) (*capture.RecordResult, error) {
	return nil, capture.ErrInvalid
}

// nullDaemon serves the daemon over null components on a real socket.
func nullDaemon(tb testing.TB) *wire.Client {
	tb.Helper()
	socket := filepath.Join(shortTempDir(tb), "agentd.sock")
	cfg := Config{SocketPath: socket, StateDir: filepath.Join(tb.TempDir(), "state")}
	d := NewWith(cfg, Components{Sessions: nullSessions{}, Screen: nullScreen{}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	tb.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := wire.Dial(context.Background(), socket, wire.ClientOptions{})
		if err == nil {
			if _, err = c.Hello(context.Background(), wire.HelloParams{}); err == nil {
				tb.Cleanup(func() { c.Close() })
				return c
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			tb.Fatalf("daemon over null components not serving: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // polling for the socket, with a deadline
	}
}

// fuzzMethods are the methods FuzzParams calls: all but agent.attach,
// which turns the connection into a raw terminal stream.
func fuzzMethods() []string {
	var ms []string
	for _, m := range wire.Methods {
		if m != wire.MethodAttach {
			ms = append(ms, m)
		}
	}
	return ms
}

// FuzzParams sends every method arbitrary JSON params and insists that no
// answer is internal: whatever a caller sends, a bad value is the caller's
// (invalid_params and the like), never a crash or an arithmetic surprise
// in the daemon. The seed corpus (testdata/fuzz/FuzzParams and the f.Add
// below) holds the values that used to wrap.
func FuzzParams(f *testing.F) {
	methods := fuzzMethods()
	for i := range methods {
		f.Add(uint8(i), []byte(`{}`))
		for _, v := range []string{"18446744073710", "9223372036855", "-1", "86400001", "9223372036854775807", "1e300", "-9223372036854775808"} {
			for _, field := range []string{"timeout_ms", "idle_ms", "lock_timeout_ms", "grace_ms", "limit", "cols", "rows", "from_seq", "seq"} {
				f.Add(uint8(i), []byte(`{"name":"x","channel_id":"c","`+field+`":`+v+`}`))
			}
		}
	}
	c := nullDaemon(f)
	f.Fuzz(func(t *testing.T, mi uint8, params []byte) {
		if !json.Valid(params) {
			return // not JSON: the frame decoder's business (internal/rpc fuzzes it)
		}
		method := methods[int(mi)%len(methods)]
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := c.CallRaw(ctx, method, json.RawMessage(params))
		if errors.Is(err, wire.ErrInternal) {
			t.Fatalf("%s with params %s answered internal: %v", method, params, err)
		}
	})
}

// TestDurationsOutOfRangeAreRefused: every duration on the wire is refused
// outside 0..24 h as invalid_params naming the field and the range, before
// any arithmetic (the values below used to wrap into a tiny, a negative or
// the default duration).
func TestDurationsOutOfRangeAreRefused(t *testing.T) {
	t.Parallel()
	c := nullDaemon(t)
	for _, tc := range []struct{ method, field string }{
		{wire.MethodAsk, "timeout_ms"}, {wire.MethodAsk, "idle_ms"}, {wire.MethodAsk, "lock_timeout_ms"},
		{wire.MethodWait, "timeout_ms"}, {wire.MethodWait, "idle_ms"},
		{wire.MethodStop, "grace_ms"},
		{wire.MethodAct, "lock_timeout_ms"},
		{wire.MethodPushToChannel, "timeout_ms"},
	} {
		for _, v := range []int64{-1, wire.MaxDurationMS + 1, 9223372036855, 18446744073710} {
			t.Run(fmt.Sprintf("%s %s %d", tc.method, tc.field, v), func(t *testing.T) {
				p := map[string]any{tc.field: v}
				switch tc.method {
				case wire.MethodAct:
					p["actions"] = []any{}
				case wire.MethodPushToChannel:
					p["channel_id"], p["message"] = "nobody", 1
				default:
					p["name"] = "x"
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, err := c.CallRaw(ctx, tc.method, p)
				var we *wire.Error
				if !errors.As(err, &we) || we.Code != wire.CodeInvalidParams || !strings.Contains(we.Message, tc.field) || !strings.Contains(we.Message, "86400000") {
					t.Errorf("%s %s=%d: got %v, want invalid_params naming %s and the range", tc.method, tc.field, v, err, tc.field)
				}
			})
		}
	}
	// The bound itself is allowed.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CallRaw(ctx, wire.MethodWait, map[string]any{"name": "x", "idle_ms": 1, "timeout_ms": wire.MaxDurationMS}); err != nil {
		t.Errorf("wait with timeout_ms at the bound: %v", err)
	}
}
