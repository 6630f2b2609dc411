package daemon

// Agent CLIs' hooks: agent.hook takes one hook call from agentctl hook,
// run by the CLI inside its session; the session component checks the
// session's secret and hands the call to its worker (session.Manager.Hook).

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// hookSessions is the session manager's side of agent.hook.
type hookSessions interface {
	Hook(ctx context.Context, req session.HookRequest) (*session.HookResult, error)
}

// hook answers agent.hook. A refusal (no token, a wrong one, another
// session's) is logged with who asked, rate-limited (refused).
func (d *Daemon) hook(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.HookParams](call)
	if err != nil {
		return nil, err
	}
	hs, ok := d.sessions.(hookSessions)
	if !ok {
		return nil, wire.Errorf(wire.CodeInternal, "the session component takes no hooks")
	}
	if len(p.Payload) > wire.MaxHookPayload {
		return nil, wire.Errorf(wire.CodeInvalidParams, "hook payload too large: %d bytes, the limit is %d", len(p.Payload), wire.MaxHookPayload)
	}
	r, err := hs.Hook(ctx, session.HookRequest{Name: p.Session, Token: p.Token, Event: p.Event, Payload: []byte(p.Payload)})
	if err != nil {
		d.refused(call, err)
		return nil, err
	}
	return &wire.HookResult{Session: r.Name, Event: r.Event, State: r.State, Changed: r.Changed}, nil
}

// hookCommand is the agentctl an agent CLI's hooks run: the one beside
// the worker's executable (agentd and agentctl are installed together),
// else the one in PATH; "" when there is none (hooks stay unwired).
func hookCommand(worker []string) string {
	exe := ""
	if len(worker) > 0 {
		exe = worker[0]
	} else if self, err := os.Executable(); err == nil {
		exe = self
	}
	if exe != "" {
		if p, err := filepath.Abs(filepath.Join(filepath.Dir(exe), "agentctl")); err == nil {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p
			}
		}
	}
	if p, err := exec.LookPath("agentctl"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return ""
}
