package daemon

// Channels: the daemon serves pkg/channel's Registry. The handlers decode
// the parameters, say who is calling, log the mutations, and leave the
// rest (registry, queues, acknowledgements, asks) to the domain; its errors
// become wire codes in toWireError.

import (
	"context"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// channelRoutes are the channel.* methods.
func (d *Daemon) channelRoutes() []Route {
	return []Route{
		{Method: wire.MethodRegisterChannel, Mutates: true, Handle: d.registerChannel},
		{Method: wire.MethodUnregisterChannel, Mutates: true, Handle: d.unregisterChannel},
		{Method: wire.MethodPushToChannel, Mutates: true, Handle: d.pushToChannel},
		{Method: wire.MethodChannelAck, Handle: d.ackChannel},
		{Method: wire.MethodChannelList, Handle: d.listChannels},
		{Method: wire.MethodChannelReply, Mutates: true, Handle: d.replyChannel},
	}
}

// ChannelPeer says who is on the other end of the connection, for
// pkg/channel (Conn is its Listener).
func (c *Conn) ChannelPeer() wire.ChannelPeer {
	return wire.ChannelPeer{PID: c.Peer.PID, UID: c.Peer.UID, Exe: c.Peer.Exe}
}

func (d *Daemon) registerChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.RegisterChannelParams](call)
	if err != nil {
		return nil, err
	}
	res, first, err := d.channels.Register(call.Conn, p, func() string { return sessionOfProcess(call.Conn.Peer.PID) })
	if err != nil {
		return nil, err
	}
	if first {
		// Runs at once if the connection already ended.
		call.Conn.OnClose(func() { d.channels.DropListener(call.Conn) })
	}
	d.log.Info().Str("channel", res.ChannelID).Str("session", res.Session).Int("peer_pid", call.Conn.Peer.PID).Msg("channel registered")
	return res, nil
}

func (d *Daemon) unregisterChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.UnregisterChannelParams](call)
	if err != nil {
		return nil, err
	}
	res, err := d.channels.Unregister(call.Conn, p.ChannelID)
	if err != nil {
		return nil, err
	}
	d.log.Info().Str("channel", res.ChannelID).Int("undelivered", res.Undelivered).Msg("channel unregistered")
	return res, nil
}

func (d *Daemon) pushToChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.PushParams](call)
	if err != nil {
		return nil, err
	}
	return d.channels.Push(ctx, call.Conn.ChannelPeer(), p)
}

func (d *Daemon) ackChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ChannelAckParams](call)
	if err != nil {
		return nil, err
	}
	return d.channels.Ack(call.Conn, p)
}

func (d *Daemon) listChannels(ctx context.Context, call *Call) (any, error) {
	if _, err := decodeParams[struct{}](call); err != nil {
		return nil, err
	}
	return d.channels.List(), nil
}

func (d *Daemon) replyChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ChannelReplyParams](call)
	if err != nil {
		return nil, err
	}
	return d.channels.Reply(p)
}

// askViaChannel sends an ask through the session's channel when it has one
// and p.Via allows it. routed is false when the ask should go to the
// terminal instead.
func (d *Daemon) askViaChannel(ctx context.Context, asker *Conn, p wire.AskParams) (routed bool, res *wire.AskResult, err error) {
	return d.channels.Ask(ctx, asker.ChannelPeer(), p, d.recordChannelAsk)
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
