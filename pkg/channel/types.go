package channel

import (
	"encoding/json"
	"fmt"
	"time"
)

// The domain's own types: what the Registry is asked and answers. The
// daemon turns the wire's parameters into these and these into the wire's
// results (pkg/daemon/channels.go), as it does for sessions and the screen;
// the spelling of the values both sides share is held equal by a test
// there.

// Limits of what a channel carries. The contract states the same numbers
// to clients (wire.MaxChannel*).
const (
	// MaxMessage bounds a pushed message (its JSON text), so one message
	// cannot hold a large share of a channel's queue.
	MaxMessage = 64 << 10
	// MaxIDLen bounds a channel id (and a cc_session_id); ids are names,
	// not payloads.
	MaxIDLen = 128
	// MaxDescription bounds a channel's description.
	MaxDescription = 1024
	// MaxReply bounds the text of a reply: an agent's answer may be long,
	// but it must fit comfortably in a frame.
	MaxReply = 1 << 20
)

// TokenEnv names the environment variable holding a session's secret,
// which a registration that binds a session may present (named in the
// refusal, so a caller learns what to give).
const TokenEnv = "AGENTD_SESSION_TOKEN"

// ValidID checks a channel id: 1 to MaxIDLen characters of
// [A-Za-z0-9._:-]. The same grammar holds for cc_session_id. The error
// names what is wrong, for people.
func ValidID(id string) error {
	if id == "" {
		return fmt.Errorf("channel id is empty; give 1 to %d characters of A-Z a-z 0-9 . _ : -, or none to have one made", MaxIDLen)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("channel id is %d characters, over the limit of %d", len(id), MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return fmt.Errorf("channel id %.40q holds %q at byte %d; use only A-Z a-z 0-9 . _ : -", id, c, i)
		}
	}
	return nil
}

// Peer identifies a process on the daemon's socket, from its credentials
// (SO_PEERCRED), not from what it says.
type Peer struct {
	PID int
	UID int
	Exe string
}

// Registration asks for a channel (Register).
type Registration struct {
	// ID names the channel (ValidID); empty has one made.
	ID string
	// Session binds the channel to that session: asks to it then go
	// through the channel.
	Session string
	// CCSessionID is the agent's own session id; pushes may name the
	// session by it.
	CCSessionID string
	// Description says what the channel is, for List.
	Description string
}

// Registered is the channel Register made.
type Registered struct {
	ID          string
	Session     string // the session it is bound to, if any
	CCSessionID string
	QueueCap    int // messages that may wait for it before pushes are busy
}

// Unregistered is what Unregister ended.
type Unregistered struct {
	ID string
	// Undelivered counts the queued messages that were not written.
	Undelivered int
}

// PushRequest is a message for a channel, named by ID or by the session it
// is bound to (its name or cc_session_id); exactly one is given.
type PushRequest struct {
	ID      string
	Session string
	// Message is any JSON value of at most MaxMessage bytes.
	Message json.RawMessage
	// Ack waits until the listener acknowledges the message.
	Ack bool
	// Timeout bounds a push with Ack; zero is DefaultPushAckTimeout.
	Timeout time.Duration
}

// PushResult is what became of a pushed message.
type PushResult struct {
	ID  string
	Seq uint64
	// Routed is true when a listener held the channel.
	Routed bool
	// Queued is true when the message was taken into the channel's queue.
	Queued bool
	// Delivered is true, for a push with Ack, when the listener
	// acknowledged the message; Detail says why not.
	Delivered bool
	Detail    string
}

// Message is one message written to a channel's listener (Listener.Deliver).
// Seq counts the channel's messages from 1.
type Message struct {
	ChannelID string
	Seq       uint64
	From      Peer
	Body      json.RawMessage
	SentAt    time.Time
	// Ack is set when the pusher waits for the acknowledgement.
	Ack bool
}

// AskMessageKind is the kind of the message an ask pushes through a
// session's channel: its Body is an AskMessage.
const AskMessageKind = "ask"

// AskMessage is the body of the message an ask pushes through a channel;
// the answer comes back with Reply naming AskID. It is JSON because it is
// the body a listener reads.
type AskMessage struct {
	Kind  string `json:"kind"` // AskMessageKind
	AskID string `json:"ask_id"`
	Text  string `json:"text"`
}

// AckResult is what an acknowledgement released.
type AckResult struct {
	ID  string
	Seq uint64
	// Released counts the pushes with ack that this acknowledgement ended.
	Released int
}

// Row describes one channel (List).
type Row struct {
	ID          string
	Session     string
	CCSessionID string
	Description string
	Listener    Peer
	QueueDepth  int // messages waiting to be written
	QueueCap    int
	Pushed      uint64 // messages taken into the queue
	Delivered   uint64 // messages written to the listener
	// Dropped counts the messages of this channel id that were queued but
	// never written because a listener of it was dropped for not reading.
	Dropped      uint64
	PendingAsks  int
	RegisteredAt time.Time
	// DroppedAt is set on the row of a channel whose listener was dropped
	// for not reading and that no listener holds since.
	DroppedAt *time.Time
}

// ReplyResult says which ask a reply answered.
type ReplyResult struct {
	AskID   string
	Session string
}

// Via is where an ask may go.
type Via string

// Ask routes.
const (
	ViaAuto    Via = "auto"    // the channel when the session has one, else the terminal (also "")
	ViaPTY     Via = "pty"     // the terminal only: Ask does not route it
	ViaChannel Via = "channel" // the channel only
)

// AskRequest is an ask that may go through a session's channel.
type AskRequest struct {
	Session string
	Text    string
	// Timeout bounds the wait for the reply; zero is the registry's
	// (SetAskTimeout).
	Timeout time.Duration
	Via     Via
}

// Answer is a reply to an ask that went through a channel.
type Answer struct {
	Session string
	Text    string
	Elapsed time.Duration
}
