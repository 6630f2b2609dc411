package wire

import (
	"context"
	"encoding/json"
	"os"
	"time"
)

// Channel methods (channel.*). A local service registers a channel on its
// own connection; from then on the daemon delivers the messages pushed to
// it as NotifyChannelMessage notifications on that connection, in the order
// they were pushed, each once. The channel ends with its connection.
const (
	MethodRegisterChannel   = "channel.register_channel"
	MethodUnregisterChannel = "channel.unregister_channel"
	MethodPushToChannel     = "channel.push_to_channel"
	MethodChannelAck        = "channel.ack"
	MethodChannelList       = "channel.list"
	MethodChannelReply      = "channel.reply"

	// NotifyChannelMessage delivers one message to the connection that
	// registered the channel: params are a ChannelMessage.
	NotifyChannelMessage = "channel.message"
)

// Channel limits.
const (
	// MaxChannelMessage bounds a pushed message (its JSON text) so one
	// message cannot hold a large share of a channel's queue.
	MaxChannelMessage = 64 << 10
	// MaxChannelIDLen bounds a channel id; ids are names, not payloads:
	// 1 to MaxChannelIDLen characters of [A-Za-z0-9._:-], the same for
	// cc_session_id.
	MaxChannelIDLen = 128
	// MaxChannelDescription bounds a channel's description, shown by
	// channel.list.
	MaxChannelDescription = 1024
	// MaxChannelReply bounds the text of channel.reply: an agent's answer
	// may be long, but it must fit comfortably in a frame.
	MaxChannelReply = 1 << 20
)

// ChannelAskKind is the kind of the message agent.ask pushes through a
// session's channel: a ChannelAsk.
const ChannelAskKind = "ask"

// RegisterChannelParams register a channel on the calling connection.
type RegisterChannelParams struct {
	// ChannelID names the channel (see MaxChannelIDLen); empty has the
	// daemon make one. An id that a live connection holds is refused busy.
	ChannelID string `json:"channel_id,omitempty"`
	// Session binds the channel to the session of that name: agent.ask on
	// it then goes through the channel, and pushes may name the session.
	Session string `json:"session,omitempty"`
	// CCSessionID is the agent's own session id (a Claude Code session id);
	// pushes may name the session by it. When Session is empty the channel
	// is bound to the agentd session the registering process runs in (its
	// AGENTD_SESSION), if any.
	CCSessionID string `json:"cc_session_id,omitempty"`
	// Description says what the channel is, for channel.list.
	Description string `json:"description,omitempty"`
	// SessionToken proves that the caller runs inside the session it binds
	// (Session, or the one of its AGENTD_SESSION): the secret the session's
	// worker put in its program's environment as SessionTokenEnv. It is
	// needed only when the caller is not a descendant of the session's
	// worker; without either proof the binding is permission_denied.
	// Client.RegisterChannel fills it from the environment when empty.
	SessionToken string `json:"session_token,omitempty"`
}

// SessionTokenEnv names the environment variable holding the secret of the
// session a program runs in (agentd's workers set it in every session
// program's environment); see RegisterChannelParams.SessionToken.
const SessionTokenEnv = "AGENTD_SESSION_TOKEN"

// RegisterChannelResult answers channel.register_channel.
type RegisterChannelResult struct {
	ChannelID   string `json:"channel_id"`
	Session     string `json:"session,omitempty"` // the session it is bound to, if any
	CCSessionID string `json:"cc_session_id,omitempty"`
	QueueCap    int    `json:"queue_cap"` // messages that may wait for it before pushes are busy
}

// UnregisterChannelParams end a channel; only the connection that
// registered it may.
type UnregisterChannelParams struct {
	ChannelID string `json:"channel_id"`
}

// UnregisterChannelResult answers channel.unregister_channel.
type UnregisterChannelResult struct {
	ChannelID string `json:"channel_id"`
	// Undelivered counts the queued messages that were not written (their
	// pushes answered when they were queued).
	Undelivered int `json:"undelivered"`
}

// PushParams push a message to a channel, named by ChannelID or by the
// session it is bound to (its name or cc_session_id); exactly one is given.
type PushParams struct {
	ChannelID string `json:"channel_id,omitempty"`
	Session   string `json:"session,omitempty"`
	// Message is any JSON value of at most MaxChannelMessage bytes.
	Message json.RawMessage `json:"message"`
	// Ack waits until the listener acknowledges the message (channel.ack).
	// Without it the push answers as soon as the message is queued: a
	// pusher never waits on the listener's socket.
	Ack bool `json:"ack,omitempty"`
	// TimeoutMS bounds a push with Ack (default 30 s; 0 to MaxDurationMS);
	// past it the push fails with timeout.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// PushResult answers channel.push_to_channel.
type PushResult struct {
	ChannelID string `json:"channel_id"`
	Seq       uint64 `json:"seq"`
	// Routed is true when a listener held the channel.
	Routed bool `json:"routed"`
	// Queued is true when the message was taken into the channel's queue:
	// it is written to the listener in seq order unless the listener
	// leaves or is dropped first (ChannelRow.Dropped counts those). A push
	// without Ack answers as soon as it is queued.
	Queued bool `json:"queued"`
	// Delivered is true, for a push with Ack, when the listener
	// acknowledged the message; false means it may not have reached the
	// listener and Detail says why. Without Ack it is false: the push does
	// not wait to find out (push with Ack for a confirmation).
	Delivered bool   `json:"delivered"`
	Detail    string `json:"detail,omitempty"`
}

// PushTimeoutDetails are the details of a push with ack that timed out.
type PushTimeoutDetails struct {
	ChannelID string `json:"channel_id"`
	Seq       uint64 `json:"seq"`
	// Written says whether the message reached the listener's connection;
	// it was not acknowledged in time either way.
	Written   bool  `json:"written"`
	TimeoutMS int64 `json:"timeout_ms"`
}

// ChannelPeer identifies a process on the daemon's socket, from its
// credentials (SO_PEERCRED), not from what it says.
type ChannelPeer struct {
	PID int    `json:"pid"`
	UID int    `json:"uid"`
	Exe string `json:"exe,omitempty"`
}

// ChannelMessage is the params of a NotifyChannelMessage notification: one
// message pushed to a channel this connection registered. Seq counts the
// channel's messages from 1, with no gaps between those delivered in order.
type ChannelMessage struct {
	ChannelID string          `json:"channel_id"`
	Seq       uint64          `json:"seq"`
	From      ChannelPeer     `json:"from"`
	Message   json.RawMessage `json:"message"`
	SentAt    time.Time       `json:"sent_at"`
	// Ack is set when the pusher waits for channel.ack of this message.
	Ack bool `json:"ack,omitempty"`
}

// ChannelAsk is the message agent.ask pushes through a session's channel;
// the answer comes back with channel.reply naming AskID.
type ChannelAsk struct {
	Kind  string `json:"kind"` // ChannelAskKind
	AskID string `json:"ask_id"`
	Text  string `json:"text"`
}

// ChannelAckParams acknowledge a channel's messages up to and including
// Seq. Only the connection that registered the channel may.
type ChannelAckParams struct {
	ChannelID string `json:"channel_id"`
	Seq       uint64 `json:"seq"`
}

// ChannelAckResult answers channel.ack.
type ChannelAckResult struct {
	ChannelID string `json:"channel_id"`
	Seq       uint64 `json:"seq"`
	// Released counts the pushes with ack that this acknowledgement ended.
	Released int `json:"released"`
}

// ChannelListResult answers channel.list.
type ChannelListResult struct {
	Channels []ChannelRow `json:"channels"`
}

// ChannelRow is one channel in channel.list.
type ChannelRow struct {
	ChannelID   string      `json:"channel_id"`
	Session     string      `json:"session,omitempty"`
	CCSessionID string      `json:"cc_session_id,omitempty"`
	Description string      `json:"description,omitempty"`
	Listener    ChannelPeer `json:"listener"`
	QueueDepth  int         `json:"queue_depth"` // messages waiting to be written
	QueueCap    int         `json:"queue_cap"`
	Pushed      uint64      `json:"pushed"`    // messages taken into the queue
	Delivered   uint64      `json:"delivered"` // messages written to the listener
	// Dropped counts the messages of this channel id that were queued but
	// never written because a listener of it was dropped for not reading
	// within the daemon's write timeout (since the daemon started).
	Dropped      uint64    `json:"dropped"`
	PendingAsks  int       `json:"pending_asks"`
	RegisteredAt time.Time `json:"registered_at"`
	// DroppedAt is set on the row of a channel whose listener was dropped
	// for not reading and that no listener holds since: the channel is
	// gone (pushes to it are channel_unknown) and the row stays a while so
	// the loss is visible. Listener is the one that was dropped.
	DroppedAt *time.Time `json:"dropped_at,omitempty"`
}

// ChannelReplyParams answer an ask that went through a channel.
type ChannelReplyParams struct {
	AskID string `json:"ask_id"`
	Text  string `json:"text"`
}

// ChannelReplyResult answers channel.reply.
type ChannelReplyResult struct {
	AskID   string `json:"ask_id"`
	Session string `json:"session"`
}

// RegisterChannel registers a channel on this connection. Its messages
// then arrive through ClientOptions.OnNotification as NotifyChannelMessage.
//
// A registration that binds a session (Session or CCSessionID) and gives no
// SessionToken presents the one in the caller's environment
// (SessionTokenEnv), so a program inside a session proves it without code.
func (c *Client) RegisterChannel(ctx context.Context, p RegisterChannelParams) (*RegisterChannelResult, error) {
	if p.SessionToken == "" && (p.Session != "" || p.CCSessionID != "") {
		p.SessionToken = os.Getenv(SessionTokenEnv)
	}
	return call[RegisterChannelResult](ctx, c, MethodRegisterChannel, p)
}

// UnregisterChannel ends a channel this connection registered.
func (c *Client) UnregisterChannel(ctx context.Context, channelID string) (*UnregisterChannelResult, error) {
	return call[UnregisterChannelResult](ctx, c, MethodUnregisterChannel, UnregisterChannelParams{ChannelID: channelID})
}

// PushToChannel pushes a message; it answers once the message is queued
// (or, with Ack, acknowledged). A full queue is ErrBusy, a channel
// nobody holds ErrChannelUnknown.
func (c *Client) PushToChannel(ctx context.Context, p PushParams) (*PushResult, error) {
	return call[PushResult](ctx, c, MethodPushToChannel, p)
}

// AckChannel acknowledges a channel's messages up to and including seq.
func (c *Client) AckChannel(ctx context.Context, channelID string, seq uint64) (*ChannelAckResult, error) {
	return call[ChannelAckResult](ctx, c, MethodChannelAck, ChannelAckParams{ChannelID: channelID, Seq: seq})
}

// ListChannels lists the registered channels.
func (c *Client) ListChannels(ctx context.Context) (*ChannelListResult, error) {
	return call[ChannelListResult](ctx, c, MethodChannelList, nil)
}

// ReplyChannel answers an ask that went through a channel. An ask that is
// not waiting (unknown, answered, timed out) is ErrInvalidParams.
func (c *Client) ReplyChannel(ctx context.Context, p ChannelReplyParams) (*ChannelReplyResult, error) {
	return call[ChannelReplyResult](ctx, c, MethodChannelReply, p)
}
