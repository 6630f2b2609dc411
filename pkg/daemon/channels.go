package daemon

// Channels: the daemon serves pkg/channel's Registry as it serves sessions
// and the screen. The handlers decode the wire's parameters into the
// domain's requests, say who is calling, log the mutations, leave the rest
// (registry, queues, acknowledgements, asks) to the domain and turn its
// answers into the wire's results; its errors become wire codes in
// toWireError.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentd/agentd/internal/rpc"
	"github.com/agentd/agentd/pkg/channel"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// Channels is what the daemon needs from the channel component:
// *channel.Registry, or a fake in tests.
type Channels interface {
	Register(l channel.Listener, p channel.Registration, sessionOfPeer func() string, mayBind func(session string) error) (res *channel.Registered, first bool, err error)
	Unregister(l channel.Listener, id string) (*channel.Unregistered, error)
	DropListener(l channel.Listener)
	Holds(l channel.Listener) bool
	Push(ctx context.Context, from channel.Peer, p channel.PushRequest) (*channel.PushResult, error)
	Ack(l channel.Listener, id string, seq uint64) (*channel.AckResult, error)
	Reply(l channel.Listener, askID, text string) (*channel.ReplyResult, error)
	Ask(ctx context.Context, asker channel.Peer, p channel.AskRequest, record channel.Recorder) (routed bool, res *channel.Answer, err error)
	List() []channel.Row
	OnDrop(f func(channel.DropInfo))
	SetQueueCap(n int)
	SetAskTimeout(d time.Duration)
	AskTimeout() time.Duration
}

// budgetMemory is the daemon's memory budget as the channel registry holds
// queued messages in it (channel.Memory).
type budgetMemory struct{ b *rpc.Budget }

func (m budgetMemory) Hold(n int) (channel.Held, error) {
	l, err := m.b.Hold(n)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// channelRoutes are the channel.* methods.
func (d *Daemon) channelRoutes() []Route {
	return []Route{
		{Method: wire.MethodRegisterChannel, Mutates: true, Handle: d.registerChannel},
		{Method: wire.MethodUnregisterChannel, Mutates: true, Handle: d.unregisterChannel},
		{Method: wire.MethodPushToChannel, Mutates: true, Lasts: LongWhenAsked, Handle: d.pushToChannel},
		{Method: wire.MethodChannelAck, Handle: d.ackChannel},
		{Method: wire.MethodChannelList, Handle: d.listChannels},
		{Method: wire.MethodChannelReply, Mutates: true, Handle: d.replyChannel},
	}
}

// ChannelPeer says who is on the other end of the connection, for
// pkg/channel (Conn is its Listener).
func (c *Conn) ChannelPeer() channel.Peer {
	return channel.Peer{PID: c.Peer.PID, UID: c.Peer.UID, Exe: c.Peer.Exe}
}

// Deliver writes a channel's message to its listener as a channel.message
// notification.
func (c *Conn) Deliver(m *channel.Message) error {
	return c.Notify(wire.NotifyChannelMessage, &wire.ChannelMessage{ChannelID: m.ChannelID, Seq: m.Seq,
		From: wirePeer(m.From), Message: m.Body, SentAt: m.SentAt, Ack: m.Ack})
}

func wirePeer(p channel.Peer) wire.ChannelPeer {
	return wire.ChannelPeer{PID: p.PID, UID: p.UID, Exe: p.Exe}
}

func (d *Daemon) registerChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.RegisterChannelParams](call)
	if err != nil {
		return nil, err
	}
	mayBind := func(name string) error {
		// A push or an ask to --session X finds a channel by cc_session_id
		// when no channel is bound to a session named X: a cc_session_id
		// that is another session's name would take that session's
		// messages, so it is refused whoever vouches for the caller.
		if cc := p.CCSessionID; cc != "" && cc != name {
			if _, err := d.sessions.Status(ctx, cc); err == nil {
				return fmt.Errorf("cc_session_id %q is the name of another session, whose pushes and asks the channel would take; give the agent's own session id", cc)
			}
		}
		return d.vouch(ctx, name, call.Conn.Peer, p.SessionToken)
	}
	reg := channel.Registration{ID: p.ChannelID, Session: p.Session, CCSessionID: p.CCSessionID, Description: p.Description}
	res, first, err := d.channels.Register(call.Conn, reg, func() string { return sessionOfProcess(call.Conn.Peer.PID) }, mayBind)
	if err != nil {
		d.refused(call, err)
		return nil, err
	}
	if first {
		// Runs at once if the connection already ended.
		call.Conn.OnClose(func() { d.channels.DropListener(call.Conn) })
	}
	d.log.Info().Str("channel", res.ID).Str("session", res.Session).Int("peer_pid", call.Conn.Peer.PID).Msg("channel registered")
	return &wire.RegisterChannelResult{ChannelID: res.ID, Session: res.Session, CCSessionID: res.CCSessionID, QueueCap: res.QueueCap}, nil
}

func (d *Daemon) unregisterChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.UnregisterChannelParams](call)
	if err != nil {
		return nil, err
	}
	res, err := d.channels.Unregister(call.Conn, p.ChannelID)
	if err != nil {
		d.refused(call, err)
		return nil, err
	}
	d.log.Info().Str("channel", res.ID).Int("undelivered", res.Undelivered).Msg("channel unregistered")
	return &wire.UnregisterChannelResult{ChannelID: res.ID, Undelivered: res.Undelivered}, nil
}

func (d *Daemon) pushToChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.PushParams](call)
	if err != nil {
		return nil, err
	}
	if p.Ack {
		ctx = call.Long(ctx) // it waits for the listener's acknowledgement
	}
	timeout, err := msDuration(p.TimeoutMS, "timeout_ms")
	if err != nil {
		return nil, err
	}
	res, err := d.channels.Push(ctx, call.Conn.ChannelPeer(),
		channel.PushRequest{ID: p.ChannelID, Session: p.Session, Message: p.Message, Ack: p.Ack, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	return &wire.PushResult{ChannelID: res.ID, Seq: res.Seq, Routed: res.Routed, Queued: res.Queued, Delivered: res.Delivered, Detail: res.Detail}, nil
}

func (d *Daemon) ackChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ChannelAckParams](call)
	if err != nil {
		return nil, err
	}
	res, err := d.channels.Ack(call.Conn, p.ChannelID, p.Seq)
	if err != nil {
		d.refused(call, err)
		return nil, err
	}
	return &wire.ChannelAckResult{ChannelID: res.ID, Seq: res.Seq, Released: res.Released}, nil
}

func (d *Daemon) listChannels(ctx context.Context, call *Call) (any, error) {
	if _, err := decodeParams[struct{}](call); err != nil {
		return nil, err
	}
	rows := d.channels.List()
	res := &wire.ChannelListResult{Channels: make([]wire.ChannelRow, len(rows))}
	for i, r := range rows {
		res.Channels[i] = channelRow(r)
	}
	return res, nil
}

// channelRow is one row of channel.list on the wire.
func channelRow(r channel.Row) wire.ChannelRow {
	return wire.ChannelRow{ChannelID: r.ID, Session: r.Session, CCSessionID: r.CCSessionID, Description: r.Description,
		Listener: wirePeer(r.Listener), QueueDepth: r.QueueDepth, QueueCap: r.QueueCap, Pushed: r.Pushed, Delivered: r.Delivered,
		Dropped: r.Dropped, PendingAsks: r.PendingAsks, RegisteredAt: r.RegisteredAt, DroppedAt: r.DroppedAt}
}

func (d *Daemon) replyChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ChannelReplyParams](call)
	if err != nil {
		return nil, err
	}
	res, err := d.channels.Reply(call.Conn, p.AskID, p.Text)
	if err != nil {
		d.refused(call, err)
		return nil, err
	}
	return &wire.ChannelReplyResult{AskID: res.AskID, Session: res.Session}, nil
}

// vouchSessions is the session manager's answer to "does this process run
// inside that session"; see session.Manager.Vouch.
type vouchSessions interface {
	Vouch(ctx context.Context, name string, pid int, token string) (bool, string, error)
}

// vouchPeer is the daemon's check that peer runs inside the session name,
// before a channel is bound to it: its process descends from the session's
// worker, or it gave the session's secret. It returns the reason for a
// refusal. Tests of the daemon's own logic replace it (Daemon.vouch).
func (d *Daemon) vouchPeer(ctx context.Context, name string, peer Peer, token string) error {
	vs, ok := d.sessions.(vouchSessions)
	if !ok {
		return errors.New("the session component cannot say who runs inside a session")
	}
	yes, why, err := vs.Vouch(ctx, name, peer.PID, token)
	if err != nil {
		return err
	}
	if !yes {
		return errors.New(why)
	}
	return nil
}

// refusalLogEvery bounds the refusals logged: one per this interval at
// most, with the number left out since, so a program hammering the daemon
// cannot flood the journal.
const refusalLogEvery = time.Second

// refused logs a permission_denied refusal with who was refused (the
// peer's pid, uid and executable: the kernel's word, not the caller's).
// Logs are rate-limited (refusalLogEvery).
func (d *Daemon) refused(call *Call, err error) {
	if !errors.Is(err, channel.ErrDenied) && !errors.Is(err, session.ErrDenied) {
		return
	}
	d.refusals.Lock()
	now := time.Now()
	if now.Sub(d.refusals.last) < refusalLogEvery {
		d.refusals.suppressed++
		d.refusals.Unlock()
		return
	}
	d.refusals.last = now
	suppressed := d.refusals.suppressed
	d.refusals.suppressed = 0
	d.refusals.Unlock()
	d.log.Warn().Str("method", call.Method).Int("peer_pid", call.Conn.Peer.PID).Int("peer_uid", call.Conn.Peer.UID).
		Str("peer_exe", call.Conn.Peer.Exe).Int("suppressed", suppressed).Str("reason", err.Error()).Msg("permission denied")
}

// askViaChannel sends an ask through the session's channel when it has one
// and via allows it, with the ask's own timeout (zero: the channels'
// default). routed is false when the ask should go to the terminal
// instead.
func (d *Daemon) askViaChannel(ctx context.Context, asker *Conn, p wire.AskParams, timeout time.Duration) (routed bool, res *wire.AskResult, err error) {
	req := channel.AskRequest{Session: p.Name, Text: p.Text, Timeout: timeout, Via: channel.Via(p.Via)}
	routed, a, err := d.channels.Ask(ctx, asker.ChannelPeer(), req, d.recordChannelAsk)
	if !routed || err != nil {
		return routed, nil, err
	}
	return true, &wire.AskResult{Name: a.Session, Answer: a.Text, Screen: []string{}, Reason: wire.AskReasonReply, ElapsedMS: a.Elapsed.Milliseconds()}, nil
}

// recordAskTimeout bounds recording a channel ask in its session's log.
const recordAskTimeout = 2 * time.Second

// recordChannelAsk puts an ask that went through a channel into its
// session's event log; a session without a live worker is skipped. It runs
// after the ask's caller may have gone, so it has its own bounded context.
func (d *Daemon) recordChannelAsk(name, question, answer, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), recordAskTimeout)
	defer cancel()
	if err := d.sessions.RecordAsk(ctx, name, question, answer, reason); err != nil {
		d.log.Debug().Str("session", name).Err(err).Msg("channel ask not recorded in the session's log")
	}
}
