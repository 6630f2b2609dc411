package wire

import (
	"context"
	"time"
)

// MethodHook reports one hook call of an agent CLI running in a session
// (agentctl hook, which the CLI's hooks run). Token must be the session's
// secret (AGENTD_SESSION_TOKEN in its program's environment): without it,
// with a wrong one or with another session's, the call is
// permission_denied and nothing changes. A payload that is not the JSON
// the session's CLI sends for Event, over MaxHookPayload, or an event the
// CLI does not have is invalid_params, the state untouched; a session
// that runs no agent CLI is invalid_status.
const MethodHook = "agent.hook"

// MaxHookPayload bounds HookParams.Payload: a hook's JSON is a few KiB.
const MaxHookPayload = 1 << 20

// HookParams are one hook call: the session it runs in (AGENTD_SESSION),
// its secret, the event the hook is registered for (Codex's notify
// program: "notify") and the JSON the CLI gave the hook, as text.
type HookParams struct {
	Session string `json:"session"`
	Token   string `json:"token"`
	Event   string `json:"event"`
	Payload string `json:"payload"`
}

// HookResult says what the hook did: the event as the CLI names it, the
// session's state after it and whether it changed.
type HookResult struct {
	Session string `json:"session"`
	Event   string `json:"event"`
	State   string `json:"state"`
	Changed bool   `json:"changed"`
}

// HookStatus says whether an agent CLI's session reports through its
// hooks (SessionStatus.Hooks): Wired with How (the overlay agentd added
// to its command), or Why not; Count hook calls taken since its program
// started, the last at Last.
type HookStatus struct {
	Wired bool      `json:"wired"`
	How   string    `json:"how,omitempty"`
	Why   string    `json:"why,omitempty"`
	Count uint64    `json:"count,omitempty"`
	Last  time.Time `json:"last,omitzero"`
}

// Hook reports a hook call (agent.hook).
func (c *Client) Hook(ctx context.Context, p HookParams) (*HookResult, error) {
	return call[HookResult](ctx, c, MethodHook, p)
}
