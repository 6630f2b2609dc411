package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/channel"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// fakeSessions answers every call with err; only the methods these tests
// reach are written (the rest would panic, which the daemon answers as
// internal).
type fakeSessions struct {
	Sessions
	err error
}

func (f fakeSessions) Status(ctx context.Context, name string) (*session.Info, error) {
	return nil, fmt.Errorf("status of %q: %w", name, f.err)
}

func (f fakeSessions) Reconcile(ctx context.Context) (*session.ReconcileReport, error) {
	return &session.ReconcileReport{}, nil
}

func (fakeSessions) SetTimeouts(session.Timeouts) {}

// fakeScreen is a screen that is never there.
type fakeScreen struct{ Screen }

func (fakeScreen) ForgetCaller(string)          {}
func (fakeScreen) SetLockTimeout(time.Duration) {}

// timeoutSessions and timeoutScreen record the timeouts the daemon hands
// them.
type timeoutSessions struct {
	fakeSessions
	got chan session.Timeouts
}

func (s timeoutSessions) SetTimeouts(t session.Timeouts) { s.got <- t }

type timeoutScreen struct {
	fakeScreen
	got chan time.Duration
}

func (s timeoutScreen) SetLockTimeout(d time.Duration) { s.got <- d }

// TestConfigTimeoutsReachTheComponents: the config's ask and lock timeouts
// are handed to the components that apply them, at start and again on a
// reload; the daemon applies none itself.
func TestConfigTimeoutsReachTheComponents(t *testing.T) {
	t.Parallel()
	cfg := Config{SocketPath: filepath.Join(shortTempDir(t), "agentd.sock"), StateDir: filepath.Join(t.TempDir(), "state"),
		AskTimeout: 42 * time.Second, AskIdle: 3 * time.Second, LockTimeout: 7 * time.Second}
	next := cfg
	next.AskTimeout, next.LockTimeout = time.Minute, time.Second
	cfg.Reload = func() (Config, error) { return next, nil }
	sessions := timeoutSessions{got: make(chan session.Timeouts, 4)}
	screen := timeoutScreen{got: make(chan time.Duration, 4)}
	d := NewWith(cfg, Components{Sessions: sessions, Screen: screen})
	serveDaemon(t, d, cfg.SocketPath)
	expect := func(when string, st session.Timeouts, lock time.Duration) {
		t.Helper()
		if got := <-sessions.got; got != st {
			t.Errorf("%s: the sessions were given %+v, want %+v", when, got, st)
		}
		if got := <-screen.got; got != lock {
			t.Errorf("%s: the screen was given a lock timeout of %s, want %s", when, got, lock)
		}
		if got := d.channels.AskTimeout(); got != st.Ask {
			t.Errorf("%s: the channels' ask timeout is %s, want %s", when, got, st.Ask)
		}
	}
	expect("at start", session.Timeouts{Ask: 42 * time.Second, AskIdle: 3 * time.Second, Lock: 7 * time.Second}, 7*time.Second)
	d.reload()
	expect("after a reload", session.Timeouts{Ask: time.Minute, AskIdle: 3 * time.Second, Lock: time.Second}, time.Second)
}

// TestDomainErrorsReachTheClientAsCodes runs the daemon with a fake session
// component and checks, through a real socket and the wire client, that
// each session error kind arrives as its code: the routing and the error
// table together, without workers.
func TestDomainErrorsReachTheClientAsCodes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		kind error
		want *wire.Error
	}{
		{session.ErrNotFound, wire.ErrAgentNotFound},
		{session.ErrInvalidStatus, wire.ErrInvalidStatus},
		{session.ErrBusy, wire.ErrBusy},
		{capture.ErrUnavailable, wire.ErrScreenUnavailable}, // a component may return any domain's error
		{errors.New("disk on fire"), wire.ErrInternal},
	} {
		t.Run(tt.kind.Error(), func(t *testing.T) {
			t.Parallel()
			cfg := Config{SocketPath: filepath.Join(shortTempDir(t), "agentd.sock"), StateDir: filepath.Join(t.TempDir(), "state")}
			td := serveDaemon(t, NewWith(cfg, Components{Sessions: fakeSessions{err: tt.kind}, Screen: fakeScreen{}}), cfg.SocketPath)
			c, err := wire.Dial(context.Background(), td.socket, wire.ClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Status(context.Background(), "w1")
			if !errors.Is(err, tt.want) {
				t.Errorf("agent.status with the sessions answering %v: got %v, want code %s", tt.kind, err, tt.want.Code)
			}
		})
	}
}

// fakeChannels answers every push with err.
type fakeChannels struct {
	Channels
	err error
}

func (f fakeChannels) Push(ctx context.Context, from channel.Peer, p channel.PushRequest) (*channel.PushResult, error) {
	return nil, f.err
}
func (fakeChannels) OnDrop(func(channel.DropInfo)) {}
func (fakeChannels) SetQueueCap(int)               {}
func (fakeChannels) SetAskTimeout(time.Duration)   {}
func (fakeChannels) AskTimeout() time.Duration     { return 0 }
func (fakeChannels) Holds(l channel.Listener) bool { return false }

// TestChannelErrorsReachTheClientAsCodes gives the daemon a fake channel
// component and checks, through a real socket, that each channel error
// kind arrives as its code.
func TestChannelErrorsReachTheClientAsCodes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		kind error
		want *wire.Error
	}{
		{channel.ErrUnknown, wire.ErrChannelUnknown},
		{channel.ErrBusy, wire.ErrBusy},
		{channel.ErrDenied, wire.ErrPermissionDenied},
		{&channel.PushTimeoutError{ChannelID: "c1", Seq: 1, Timeout: time.Second}, wire.ErrTimeout},
	} {
		t.Run(tt.kind.Error(), func(t *testing.T) {
			t.Parallel()
			cfg := Config{SocketPath: filepath.Join(shortTempDir(t), "agentd.sock"), StateDir: filepath.Join(t.TempDir(), "state")}
			td := serveDaemon(t, NewWith(cfg, Components{Sessions: fakeSessions{}, Screen: fakeScreen{}, Channels: fakeChannels{err: tt.kind}}), cfg.SocketPath)
			c, err := wire.Dial(context.Background(), td.socket, wire.ClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.PushToChannel(context.Background(), wire.PushParams{ChannelID: "c1", Message: json.RawMessage(`"hi"`)})
			if !errors.Is(err, tt.want) {
				t.Errorf("channel.push with the channels answering %v: got %v, want code %s", tt.kind, err, tt.want.Code)
			}
		})
	}
}
