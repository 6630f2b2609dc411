package wire

import (
	"context"
	"time"
)

// MethodSubscribe streams the state changes of every session, or of the
// named ones, as NotifyStateChange notifications (issue 27): an agent
// CLI's state (working, waiting, needs_approval, needs_attention) and
// every session's life (spawned, exited, restarted, removed). With
// Current it begins with each session's state now (kind "current"); with
// Follow it goes on until the client hangs up or the daemon stops (then
// the answer is shutting_down), else it answers once what is recorded has
// been sent. The stream holds one change at a time in the daemon: a
// subscriber that stops reading is dropped after the connection's write
// timeout, as channel listeners are, and comes back with its Cursor.
// Programs that are not agent CLIs have no states in the stream (their
// ready and busy flip on every keystroke); wait --state serves those.
const MethodSubscribe = "agent.subscribe"

// NotifyStateChange carries one StateChange of an agent.subscribe stream.
const NotifyStateChange = "agent.state_change"

// The kinds of StateChange.
const (
	ChangeCurrent   = "current"   // the state when the subscription began
	ChangeState     = "state"     // an agent CLI's state changed
	ChangeSpawned   = "spawned"   // the session's program started
	ChangeExited    = "exited"    // it ended
	ChangeRestarted = "restarted" // a restart started it again
	ChangeRemoved   = "removed"   // the session's files were removed
)

// SubscribeParams say which sessions, and from where.
type SubscribeParams struct {
	// Names are the sessions; empty is every session, those spawned later
	// included.
	Names []string `json:"names,omitempty"`
	// Cursor is where an earlier stream left off; none is now.
	Cursor *Cursor `json:"cursor,omitempty"`
	// Current begins with each session's state now.
	Current bool `json:"current,omitempty"`
	// Follow streams changes until the client hangs up.
	Follow bool `json:"follow,omitempty"`
}

// Cursor is where a stream left off: Seqs, by session, the Seq of the
// last change received; a session not in it (spawned meanwhile) is read
// from its changes after After. A client keeps it from the changes it
// receives (each has Name, Seq and TS) and sends it when it subscribes
// again, after a daemon restart say: nothing recorded meanwhile is lost.
type Cursor struct {
	After time.Time         `json:"after,omitzero"`
	Seqs  map[string]uint64 `json:"seqs,omitempty"`
}

// Add moves the cursor past c.
func (cur *Cursor) Add(c StateChange) {
	if c.Seq == 0 {
		return
	}
	if cur.Seqs == nil {
		cur.Seqs = map[string]uint64{}
	}
	cur.Seqs[c.Name] = max(cur.Seqs[c.Name], c.Seq)
	if c.TS.After(cur.After) {
		cur.After = c.TS
	}
}

// StateChange is one change of a session's state or life.
type StateChange struct {
	Name string `json:"name"`
	// Kind is one of the Change* constants.
	Kind string `json:"kind"`
	// Seq is the session's event-log record (0 for current and removed).
	Seq uint64    `json:"seq,omitempty"`
	TS  time.Time `json:"ts"`
	// State is the agent CLI's state after the change ("" when it has
	// none), entered at Since, told by Source (screen or hook); Detail is
	// what it asks.
	State  string       `json:"state,omitempty"`
	Since  time.Time    `json:"since,omitzero"`
	Source string       `json:"source,omitempty"`
	Detail *StateDetail `json:"detail,omitempty"`
	// Prev is the state before, when known, entered at PrevSince.
	Prev      string    `json:"prev,omitempty"`
	PrevSince time.Time `json:"prev_since,omitzero"`
	// TurnMS is the length of the turn a change to waiting ends, when
	// known: how long the agent worked since the person last gave it
	// something (a prompt, or an answer to what it asked).
	TurnMS int64 `json:"turn_ms,omitempty"`
	// Status is the session's status (current, spawned); Termination,
	// ExitCode and Signal how its program ended (exited, restarted);
	// Reason what the record says.
	Status      Status      `json:"status,omitempty"`
	Termination Termination `json:"termination,omitempty"`
	ExitCode    *int        `json:"exit_code,omitempty"`
	Signal      string      `json:"signal,omitempty"`
	Reason      string      `json:"reason,omitempty"`
}

// SubscribeResult ends a subscription that was not cut: Cursor is where
// it ended.
type SubscribeResult struct {
	Cursor Cursor `json:"cursor"`
}

// Subscribe streams state changes (agent.subscribe): they arrive through
// the client's OnNotification as NotifyStateChange.
func (c *Client) Subscribe(ctx context.Context, p SubscribeParams) (*SubscribeResult, error) {
	return call[SubscribeResult](ctx, c, MethodSubscribe, p)
}

// NotificationsStatus is whether the daemon shows desktop notifications
// (agent.hello's notifications, for doctor): On with the bus and the
// server, or Why not (no session bus, off in the configuration, no
// server answering).
type NotificationsStatus struct {
	On      bool   `json:"on"`
	Bus     string `json:"bus,omitempty"`
	Server  string `json:"server,omitempty"`
	Actions bool   `json:"actions,omitempty"` // the server shows Approve, Deny and Open
	Why     string `json:"why,omitempty"`
}
