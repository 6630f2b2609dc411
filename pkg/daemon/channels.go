package daemon

// Channels.
//
// A channel belongs to the connection that registered it and ends with it.
// Each channel has a bounded FIFO of messages waiting to be written and, only
// while that queue is not empty, one writer goroutine: it writes the
// messages in seq order with Conn.Notify, so a listener sees them in the
// order they were pushed, each once. A push waits until its message is
// written (or acknowledged, with ack) and answers delivered accordingly; a
// full queue answers busy; a channel that ends fails every message still
// queued with delivered false. Nothing is retried, so nothing is delivered
// twice, and nothing is dropped without its push saying so.
//
// Decisions:
//   - Channel ids (and cc_session_ids) are 1-128 characters of
//     [A-Za-z0-9._:-]; a generated id is "ch-" and 16 hex digits.
//   - An id, a session or a cc_session_id held by a live channel is refused
//     busy (retryable: it is free again once that connection ends).
//   - One connection holds at most MaxChannelsPerConn channels, the daemon
//     at most MaxChannels; beyond, register is busy.
//   - Unregistering or acknowledging another connection's channel is
//     permission_denied.
//   - channel.ack is cumulative: it acknowledges seq and every earlier
//     message.
//   - A reply to an ask that is not waiting (unknown, answered, timed out)
//     is invalid_params: the ask_id is wrong, no channel is missing.
//   - agent.ask through a channel: when the ask message cannot be written
//     (the listener went away) and via is auto, the ask falls back to the
//     terminal; when the channel ends before the reply, the ask fails
//     channel_unknown.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// Channel limits and defaults.
const (
	// DefaultChannelQueue bounds the messages waiting to be written to one
	// listener; past it pushes are busy. With MaxChannelMessage it bounds a
	// channel's memory. The lead wires a config field to
	// channelRegistry.queueCap later.
	DefaultChannelQueue = 1024
	// DefaultChannelQueueBytes bounds the bytes waiting for one listener,
	// so a queue of large messages is busy before it is long.
	DefaultChannelQueueBytes = 8 << 20
	// MaxChannelsPerConn bounds the channels one connection may hold, so
	// one client cannot take the daemon-wide allowance.
	MaxChannelsPerConn = 256
	// MaxChannels bounds the channels of the whole daemon, and with it
	// the memory they hold when idle.
	MaxChannels = 4096
	// MaxPendingChannelAsks bounds the asks waiting for a reply.
	MaxPendingChannelAsks = 4096
	// DefaultPushAckTimeout is how long a push with ack waits for the
	// acknowledgement when it gives no timeout_ms.
	DefaultPushAckTimeout = 30 * time.Second
	// DefaultChannelAskTimeout is how long an ask through a channel waits
	// for its reply when it gives no timeout_ms.
	DefaultChannelAskTimeout = 10 * time.Minute
)

// channelRegistry holds the daemon's channels and the asks waiting for a
// reply through them.
type channelRegistry struct {
	queueCap   atomic.Int64 // messages per channel queue; config reload changes it
	queueBytes int          // bytes per channel queue

	mu        sync.Mutex
	byID      map[string]*channel
	bySession map[string]*channel
	byCC      map[string]*channel
	byConn    map[*Conn]map[string]*channel
	asks      map[string]*channelAsk
}

func newChannelRegistry() *channelRegistry {
	r := &channelRegistry{
		queueBytes: DefaultChannelQueueBytes,
		byID:       map[string]*channel{}, bySession: map[string]*channel{}, byCC: map[string]*channel{},
		byConn: map[*Conn]map[string]*channel{}, asks: map[string]*channelAsk{},
	}
	r.queueCap.Store(DefaultChannelQueue)
	return r
}

// setQueueCap changes the queue bound of every channel; zero or less
// restores the default.
func (r *channelRegistry) setQueueCap(n int) {
	if n <= 0 {
		n = DefaultChannelQueue
	}
	r.queueCap.Store(int64(n))
}

func (d *Daemon) chanReg() *channelRegistry { return d.channels }

// channel is one registered channel.
type channel struct {
	id, session, cc, desc string
	conn                  *Conn
	registered            time.Time
	gone                  chan struct{} // closed when the channel ends

	mu          sync.Mutex
	closed      bool
	queue       []*delivery // waiting to be written; queue[head:] are live
	head        int
	queuedBytes int
	writing     bool // a writer goroutine runs
	lastSeq     uint64
	pushed      uint64
	delivered   uint64
	acks        map[uint64]*delivery // pushes with ack waiting for channel.ack
	asks        int                  // asks waiting for a reply through it
}

// delivery is one pushed message on its way to the listener.
type delivery struct {
	msg  wire.ChannelMessage
	size int
	done chan struct{} // closed once written or failed; then written is final
	// written is set before done is closed.
	written bool
	ackDone chan struct{} // with ack: closed on acknowledgement
}

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

func peerOfConn(c *Conn) wire.ChannelPeer {
	return wire.ChannelPeer{PID: c.Peer.PID, UID: c.Peer.UID, Exe: c.Peer.Exe}
}

func randomID(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (d *Daemon) registerChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.RegisterChannelParams](call)
	if err != nil {
		return nil, err
	}
	if p.ChannelID == "" {
		p.ChannelID = randomID("ch-")
	} else if err := wire.ValidChannelID(p.ChannelID); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	if p.Session != "" {
		if err := session.ValidateName(p.Session); err != nil {
			return nil, wire.Errorf(wire.CodeInvalidParams, "session %.70q is not a session name: names match [a-z0-9][a-z0-9._-]{0,62}", p.Session)
		}
	}
	if p.CCSessionID != "" {
		if err := wire.ValidChannelID(p.CCSessionID); err != nil {
			return nil, wire.Errorf(wire.CodeInvalidParams, "cc_session_id %.70q: ids are 1 to %d characters of A-Z a-z 0-9 . _ : -", p.CCSessionID, wire.MaxChannelIDLen)
		}
		if p.Session == "" {
			p.Session = sessionOfProcess(call.Conn.Peer.PID)
			if session.ValidateName(p.Session) != nil {
				p.Session = ""
			}
		}
	}
	if len(p.Description) > wire.MaxChannelDescription || !utf8.ValidString(p.Description) {
		return nil, wire.Errorf(wire.CodeInvalidParams, "description is %d bytes; give at most %d bytes of UTF-8", len(p.Description), wire.MaxChannelDescription)
	}
	ch := &channel{id: p.ChannelID, session: p.Session, cc: p.CCSessionID, desc: p.Description,
		conn: call.Conn, registered: time.Now(), gone: make(chan struct{})}
	r := d.chanReg()
	first, err := r.add(ch)
	if err != nil {
		return nil, err
	}
	if first {
		// Runs at once if the connection already ended.
		call.Conn.OnClose(func() { r.dropConn(call.Conn) })
	}
	d.log.Info().Str("channel", ch.id).Str("session", ch.session).Int("peer_pid", call.Conn.Peer.PID).Msg("channel registered")
	return &wire.RegisterChannelResult{ChannelID: ch.id, Session: ch.session, CCSessionID: ch.cc, QueueCap: int(r.queueCap.Load())}, nil
}

// add registers ch; first is true when it is its connection's first
// channel, so the caller arranges the cleanup.
func (r *channelRegistry) add(ch *channel) (first bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.byID[ch.id]; o != nil {
		return false, wire.Errorf(wire.CodeBusy, "channel %q is held by %s; it is free again when that connection ends, or register without an id to get a new one", ch.id, o.conn)
	}
	if o := r.bySession[ch.session]; ch.session != "" && o != nil {
		return false, wire.Errorf(wire.CodeBusy, "session %q already has channel %q (%s); a session has one channel at a time", ch.session, o.id, o.conn)
	}
	if o := r.byCC[ch.cc]; ch.cc != "" && o != nil {
		return false, wire.Errorf(wire.CodeBusy, "cc_session_id %q is already bound to channel %q (%s)", ch.cc, o.id, o.conn)
	}
	mine := r.byConn[ch.conn]
	if len(mine) >= MaxChannelsPerConn {
		return false, wire.Errorf(wire.CodeBusy, "this connection already holds %d channels, the limit per connection; unregister some or use another connection", len(mine))
	}
	if len(r.byID) >= MaxChannels {
		return false, wire.Errorf(wire.CodeBusy, "agentd already has %d channels, its limit; retry when some have ended", len(r.byID))
	}
	if mine == nil {
		mine = map[string]*channel{}
		r.byConn[ch.conn] = mine
		first = true
	}
	mine[ch.id] = ch
	r.byID[ch.id] = ch
	if ch.session != "" {
		r.bySession[ch.session] = ch
	}
	if ch.cc != "" {
		r.byCC[ch.cc] = ch
	}
	return first, nil
}

// removeLocked takes ch out of the maps; the caller ends it.
func (r *channelRegistry) removeLocked(ch *channel) {
	delete(r.byID, ch.id)
	if r.bySession[ch.session] == ch {
		delete(r.bySession, ch.session)
	}
	if r.byCC[ch.cc] == ch {
		delete(r.byCC, ch.cc)
	}
	if mine := r.byConn[ch.conn]; mine != nil {
		delete(mine, ch.id)
	}
}

// dropConn ends every channel of a connection that ended.
func (r *channelRegistry) dropConn(c *Conn) {
	r.mu.Lock()
	mine := r.byConn[c]
	delete(r.byConn, c)
	var chs []*channel
	for _, ch := range mine {
		r.removeLocked(ch)
		chs = append(chs, ch)
	}
	r.mu.Unlock()
	for _, ch := range chs {
		ch.end()
	}
}

// end closes the channel: queued messages fail (their pushes answer
// delivered false), pushes waiting for an ack and asks waiting for a reply
// see gone. It returns how many queued messages were not written.
func (ch *channel) end() int {
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return 0
	}
	ch.closed = true
	rest := ch.queue[ch.head:]
	ch.queue, ch.head, ch.queuedBytes = nil, 0, 0
	ch.acks = nil
	ch.mu.Unlock()
	for _, dv := range rest {
		close(dv.done)
	}
	close(ch.gone)
	return len(rest)
}

// find looks a channel up by id or by the session it is bound to (name or
// cc_session_id).
func (r *channelRegistry) find(id, sess string) (*channel, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != "" {
		if ch := r.byID[id]; ch != nil {
			return ch, nil
		}
		return nil, wire.Errorf(wire.CodeChannelUnknown, "no channel %.140q is registered; agentctl channel list shows the channels", id)
	}
	if ch := r.bySession[sess]; ch != nil {
		return ch, nil
	}
	if ch := r.byCC[sess]; ch != nil {
		return ch, nil
	}
	return nil, wire.Errorf(wire.CodeChannelUnknown, "no channel is bound to session %.140q; agentctl channel list shows the channels", sess)
}

// enqueue takes a message into the channel's queue and starts the writer
// if none runs. It fails busy when the queue is full and channel_unknown
// when the channel has ended.
func (r *channelRegistry) enqueue(ch *channel, from wire.ChannelPeer, msg json.RawMessage, ack bool) (*delivery, error) {
	dv := &delivery{size: len(msg), done: make(chan struct{})}
	if ack {
		dv.ackDone = make(chan struct{})
	}
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return nil, wire.Errorf(wire.CodeChannelUnknown, "channel %q has ended", ch.id)
	}
	depth := len(ch.queue) - ch.head
	if queued := ch.queuedBytes; depth >= int(r.queueCap.Load()) || (depth > 0 && queued+dv.size > r.queueBytes) {
		ch.mu.Unlock()
		return nil, wire.Errorf(wire.CodeBusy, "channel %q has %d messages (%d bytes) waiting for its listener, its limit; retry later", ch.id, depth, queued)
	}
	ch.lastSeq++
	ch.pushed++
	dv.msg = wire.ChannelMessage{ChannelID: ch.id, Seq: ch.lastSeq, From: from, Message: msg, SentAt: time.Now().UTC(), Ack: ack}
	if ch.head > 0 && ch.head == len(ch.queue) {
		ch.queue, ch.head = ch.queue[:0], 0
	}
	ch.queue = append(ch.queue, dv)
	ch.queuedBytes += dv.size
	if ack {
		if ch.acks == nil {
			ch.acks = map[uint64]*delivery{}
		}
		ch.acks[dv.msg.Seq] = dv
	}
	start := !ch.writing
	ch.writing = true
	ch.mu.Unlock()
	if start {
		go ch.writeLoop()
	}
	return dv, nil
}

// writeLoop writes queued messages in order until the queue is empty.
func (ch *channel) writeLoop() {
	for {
		ch.mu.Lock()
		if ch.closed || ch.head == len(ch.queue) {
			ch.writing = false
			if cap(ch.queue) > 64 {
				ch.queue, ch.head = nil, 0 // do not keep a burst's array while idle
			}
			ch.mu.Unlock()
			return
		}
		dv := ch.queue[ch.head]
		ch.queue[ch.head] = nil
		ch.head++
		ch.mu.Unlock()

		err := ch.conn.Notify(wire.NotifyChannelMessage, &dv.msg)

		ch.mu.Lock()
		if !ch.closed {
			ch.queuedBytes -= dv.size
		}
		if err == nil {
			dv.written = true
			ch.delivered++
		}
		ch.mu.Unlock()
		close(dv.done)
		// A failed write closes the connection; its OnClose ends the
		// channel and fails what is still queued.
	}
}

// ack releases the pushes with ack up to and including seq.
func (ch *channel) ack(seq uint64) (int, error) {
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return 0, wire.Errorf(wire.CodeChannelUnknown, "channel %q has ended", ch.id)
	}
	if seq > ch.lastSeq {
		last := ch.lastSeq
		ch.mu.Unlock()
		return 0, wire.Errorf(wire.CodeInvalidParams, "channel %q has no message %d yet (the last is %d)", ch.id, seq, last)
	}
	var done []*delivery
	for s, dv := range ch.acks {
		if s <= seq {
			done = append(done, dv)
			delete(ch.acks, s)
		}
	}
	if len(ch.acks) == 0 {
		ch.acks = nil
	}
	ch.mu.Unlock()
	for _, dv := range done {
		close(dv.ackDone)
	}
	return len(done), nil
}

// forgetAck stops waiting for dv's acknowledgement.
func (ch *channel) forgetAck(dv *delivery) {
	ch.mu.Lock()
	delete(ch.acks, dv.msg.Seq)
	ch.mu.Unlock()
}

func (d *Daemon) unregisterChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.UnregisterChannelParams](call)
	if err != nil {
		return nil, err
	}
	r := d.chanReg()
	r.mu.Lock()
	ch := r.byID[p.ChannelID]
	if ch == nil {
		r.mu.Unlock()
		return nil, wire.Errorf(wire.CodeChannelUnknown, "no channel %.140q is registered; agentctl channel list shows the channels", p.ChannelID)
	}
	if ch.conn != call.Conn {
		r.mu.Unlock()
		return nil, wire.Errorf(wire.CodePermissionDenied, "channel %q belongs to %s; only the connection that registered it may unregister it", ch.id, ch.conn)
	}
	r.removeLocked(ch)
	r.mu.Unlock()
	n := ch.end()
	d.log.Info().Str("channel", ch.id).Int("undelivered", n).Msg("channel unregistered")
	return &wire.UnregisterChannelResult{ChannelID: ch.id, Undelivered: n}, nil
}

func (d *Daemon) pushToChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.PushParams](call)
	if err != nil {
		return nil, err
	}
	if (p.ChannelID == "") == (p.Session == "") {
		return nil, wire.Errorf(wire.CodeInvalidParams, "name the channel by channel_id or by session, exactly one of them")
	}
	if len(p.Message) == 0 {
		return nil, wire.Errorf(wire.CodeInvalidParams, "message is missing; give any JSON value, e.g. \"text\" or {\"k\": 1}")
	}
	if len(p.Message) > wire.MaxChannelMessage {
		return nil, wire.Errorf(wire.CodeInvalidParams, "message is %d bytes, over the limit of %d; send a path or a reference instead", len(p.Message), wire.MaxChannelMessage)
	}
	timeout, err := msDuration(p.TimeoutMS, "timeout_ms")
	if err != nil {
		return nil, err
	}
	if timeout == 0 {
		timeout = DefaultPushAckTimeout
	}
	r := d.chanReg()
	ch, err := r.find(p.ChannelID, p.Session)
	if err != nil {
		return nil, err
	}
	// The message is kept as sent: decodeParams has checked it is JSON.
	msg := append(json.RawMessage(nil), p.Message...)
	var deadline <-chan time.Time
	if p.Ack {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	dv, err := r.enqueue(ch, peerOfConn(call.Conn), msg, p.Ack)
	if err != nil {
		return nil, err
	}
	res := &wire.PushResult{ChannelID: ch.id, Seq: dv.msg.Seq, Routed: true}
	timedOut := func(written bool) error {
		ch.forgetAck(dv)
		return wire.Errorf(wire.CodeTimeout, "channel %q: message %d was not acknowledged within %s", ch.id, dv.msg.Seq, timeout).
			WithDetails(wire.PushTimeoutDetails{ChannelID: ch.id, Seq: dv.msg.Seq, Written: written, TimeoutMS: timeout.Milliseconds()})
	}
	select {
	case <-dv.done:
	case <-deadline:
		// Still queued: it will be written, but not acknowledged in time.
		return nil, timedOut(false)
	case <-ctx.Done():
		if p.Ack {
			ch.forgetAck(dv)
		}
		return nil, ctx.Err()
	}
	if !dv.written {
		res.Detail = "the listener's connection ended before the message was written to it"
		return res, nil
	}
	if !p.Ack {
		res.Delivered = true
		return res, nil
	}
	select {
	case <-dv.ackDone:
		res.Delivered = true
	case <-ch.gone:
		// An acknowledgement may have come just before the end.
		select {
		case <-dv.ackDone:
			res.Delivered = true
		default:
			res.Detail = "the message was written, but the listener's connection ended before it acknowledged it"
		}
	case <-deadline:
		return nil, timedOut(true)
	case <-ctx.Done():
		ch.forgetAck(dv)
		return nil, ctx.Err()
	}
	return res, nil
}

func (d *Daemon) ackChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ChannelAckParams](call)
	if err != nil {
		return nil, err
	}
	r := d.chanReg()
	if p.ChannelID == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "channel_id is missing")
	}
	ch, err := r.find(p.ChannelID, "")
	if err != nil {
		return nil, err
	}
	if ch.conn != call.Conn {
		return nil, wire.Errorf(wire.CodePermissionDenied, "channel %q belongs to %s; only its listener may acknowledge its messages", ch.id, ch.conn)
	}
	n, err := ch.ack(p.Seq)
	if err != nil {
		return nil, err
	}
	return &wire.ChannelAckResult{ChannelID: ch.id, Seq: p.Seq, Released: n}, nil
}

func (d *Daemon) listChannels(ctx context.Context, call *Call) (any, error) {
	if _, err := decodeParams[struct{}](call); err != nil {
		return nil, err
	}
	r := d.chanReg()
	r.mu.Lock()
	chs := make([]*channel, 0, len(r.byID))
	for _, ch := range r.byID {
		chs = append(chs, ch)
	}
	r.mu.Unlock()
	sort.Slice(chs, func(i, j int) bool { return chs[i].id < chs[j].id })
	res := &wire.ChannelListResult{Channels: make([]wire.ChannelRow, 0, len(chs))}
	for _, ch := range chs {
		ch.mu.Lock()
		row := wire.ChannelRow{ChannelID: ch.id, Session: ch.session, CCSessionID: ch.cc, Description: ch.desc,
			Listener: peerOfConn(ch.conn), QueueDepth: len(ch.queue) - ch.head, QueueCap: int(r.queueCap.Load()),
			Pushed: ch.pushed, Delivered: ch.delivered, PendingAsks: ch.asks, RegisteredAt: ch.registered}
		ch.mu.Unlock()
		res.Channels = append(res.Channels, row)
	}
	return res, nil
}

// channelAsk is an agent.ask waiting for its channel.reply.
type channelAsk struct {
	id      string
	session string
	reply   chan string // buffered 1: a reply never blocks
}

func (d *Daemon) replyChannel(ctx context.Context, call *Call) (any, error) {
	p, err := decodeParams[wire.ChannelReplyParams](call)
	if err != nil {
		return nil, err
	}
	if len(p.Text) > wire.MaxChannelReply {
		return nil, wire.Errorf(wire.CodeInvalidParams, "reply is %d bytes, over the limit of %d", len(p.Text), wire.MaxChannelReply)
	}
	r := d.chanReg()
	r.mu.Lock()
	a := r.asks[p.AskID]
	delete(r.asks, p.AskID)
	r.mu.Unlock()
	if a == nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "ask %.140q is not waiting for a reply: it was answered, timed out, or never existed", p.AskID)
	}
	a.reply <- p.Text
	return &wire.ChannelReplyResult{AskID: a.id, Session: a.session}, nil
}

// askViaChannel sends an ask through the session's channel when it has one
// and p.Via allows it. routed is false when the ask should go to the
// terminal instead.
func (d *Daemon) askViaChannel(ctx context.Context, asker *Conn, p wire.AskParams) (routed bool, res *wire.AskResult, err error) {
	if p.Via == "pty" {
		return false, nil, nil
	}
	r := d.chanReg()
	r.mu.Lock()
	ch := r.bySession[p.Name]
	r.mu.Unlock()
	if ch == nil {
		return false, nil, nil
	}
	if len(p.Text) > wire.MaxChannelMessage {
		return true, nil, wire.Errorf(wire.CodeInvalidParams, "ask text is %d bytes, over the limit of %d", len(p.Text), wire.MaxChannelMessage)
	}
	timeout := time.Duration(p.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = DefaultChannelAskTimeout
	}
	start := time.Now()
	t := time.NewTimer(timeout)
	defer t.Stop()

	a := &channelAsk{id: randomID("ask-"), session: p.Name, reply: make(chan string, 1)}
	r.mu.Lock()
	if len(r.asks) >= MaxPendingChannelAsks {
		r.mu.Unlock()
		return true, nil, wire.Errorf(wire.CodeBusy, "%d asks are already waiting for replies through channels, the limit; retry later", len(r.asks))
	}
	r.asks[a.id] = a
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.asks, a.id)
		r.mu.Unlock()
	}()
	ch.mu.Lock()
	ch.asks++
	ch.mu.Unlock()
	defer func() {
		ch.mu.Lock()
		ch.asks--
		ch.mu.Unlock()
	}()

	msg, err := json.Marshal(wire.ChannelAsk{Kind: wire.ChannelAskKind, AskID: a.id, Text: p.Text})
	if err != nil {
		return true, nil, err
	}
	dv, err := r.enqueue(ch, peerOfConn(asker), msg, false)
	if err != nil {
		if p.Via != "channel" && wireCode(err) == wire.CodeChannelUnknown {
			return false, nil, nil // the listener just left: use the terminal
		}
		return true, nil, err
	}
	// Once written, the ask is recorded in the session's event log and asks
	// counter however it ends, like an ask typed into the terminal.
	outcome, answer := "", ""
	defer func() {
		if outcome != "" {
			d.recordChannelAsk(p.Name, p.Text, answer, outcome)
		}
	}()
	timedOut := func() error {
		outcome = session.ReasonTimeout
		return wire.Errorf(wire.CodeTimeout, "session %q: no reply through channel %q within %s", p.Name, ch.id, timeout).
			WithDetails(wire.TimeoutDetails{Name: p.Name, Op: "ask", TimeoutMS: timeout.Milliseconds(), Screen: []string{}})
	}
	select {
	case <-dv.done:
	case <-t.C:
		return true, nil, timedOut()
	case <-ctx.Done():
		return true, nil, ctx.Err()
	}
	if !dv.written {
		if p.Via != "channel" {
			return false, nil, nil
		}
		return true, nil, wire.Errorf(wire.CodeChannelUnknown, "channel %q of session %q ended before the ask could be written to it", ch.id, p.Name)
	}
	select {
	case answer = <-a.reply:
		outcome = string(wire.AskReasonReply)
		return true, d.channelAnswer(p.Name, answer, start), nil
	case <-ch.gone:
		select {
		case answer = <-a.reply:
			outcome = string(wire.AskReasonReply)
			return true, d.channelAnswer(p.Name, answer, start), nil
		default:
		}
		outcome = session.ReasonInterrupted
		return true, nil, wire.Errorf(wire.CodeChannelUnknown, "channel %q of session %q ended before it replied to ask %s", ch.id, p.Name, a.id)
	case <-t.C:
		return true, nil, timedOut()
	case <-ctx.Done():
		outcome = session.ReasonCanceled
		return true, nil, ctx.Err()
	}
}

// recordAskTimeout bounds recording a channel ask in its session's log.
const recordAskTimeout = 2 * time.Second

// recordChannelAsk puts an ask that went through a channel into its
// session's event log; a session without a live worker is skipped.
func (d *Daemon) recordChannelAsk(name, question, answer, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), recordAskTimeout)
	defer cancel()
	if err := d.sessions.RecordAsk(ctx, name, question, answer, reason); err != nil {
		d.log.Debug().Str("session", name).Err(err).Msg("channel ask not recorded in the session's log")
	}
}

func (d *Daemon) channelAnswer(name, text string, start time.Time) *wire.AskResult {
	return &wire.AskResult{Name: name, Answer: text, Screen: []string{}, Reason: wire.AskReasonReply, ElapsedMS: time.Since(start).Milliseconds()}
}

// wireCode is the code of a *wire.Error, or "".
func wireCode(err error) wire.Code {
	if e, ok := err.(*wire.Error); ok {
		return e.Code
	}
	return ""
}
