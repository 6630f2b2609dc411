package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// fakeSessions answers every call with err; only the methods these tests
// reach are written (the rest would panic, which the daemon answers as
// internal).
type fakeSessions struct {
	sessionService
	err error
}

func (f fakeSessions) Status(ctx context.Context, name string) (*session.Info, error) {
	return nil, fmt.Errorf("status of %q: %w", name, f.err)
}

func (f fakeSessions) Reconcile(ctx context.Context) (*session.ReconcileReport, error) {
	return &session.ReconcileReport{}, nil
}

// fakeScreen is a screen that is never there.
type fakeScreen struct{ screenService }

func (fakeScreen) ForgetCaller(string) {}

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
			td := serveDaemon(t, New(cfg).withComponents(fakeSessions{err: tt.kind}, fakeScreen{}), cfg.SocketPath)
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
