package channel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/internal/limits"
)

// Limits and defaults.
const (
	// DefaultQueue bounds the messages waiting to be written to one
	// listener; past it pushes are busy. With MaxMessage it
	// bounds a channel's memory. Config can change it (SetQueueCap).
	DefaultQueue = 1024
	// DefaultQueueBytes bounds the bytes waiting for one listener, so a
	// queue of large messages is busy before it is long.
	DefaultQueueBytes = 8 << 20
	// MaxPerListener bounds the channels one connection may hold, so one
	// client cannot take the daemon-wide allowance.
	MaxPerListener = 256
	// MaxChannels bounds the channels of the whole daemon, and with it the
	// memory they hold when idle.
	MaxChannels = 4096
	// MaxPendingAsks bounds the asks waiting for a reply.
	MaxPendingAsks = 4096
	// DefaultPushAckTimeout is how long a push with ack waits for the
	// acknowledgement when it gives no timeout.
	DefaultPushAckTimeout = 30 * time.Second
	// DefaultAskTimeout is how long an ask through a channel waits for its
	// reply when it gives no timeout.
	DefaultAskTimeout = 10 * time.Minute
	// DroppedKeep is how long channel.list keeps showing a channel whose
	// listener was dropped for not reading, so the loss is seen by whoever
	// looks next; a new registration of the id takes the row over.
	DroppedKeep = time.Hour
)

// Listener is the connection a channel belongs to and its messages are
// written to. The daemon's connections implement it; a channel ends when
// its Listener's connection does (the daemon calls DropListener).
type Listener interface {
	// Deliver writes one message; an error means the listener is gone.
	Deliver(m *Message) error
	// ChannelPeer says who is on the other end, for list and for messages.
	ChannelPeer() Peer
	// String names the connection in messages for people.
	String() string
}

// Staller is implemented by a Listener that can say it was cut off for not
// reading: Stalled returns the write error (a timeout) that ended its
// connection, or nil. The registry asks when the listener's channels end,
// so it can tell a listener that left from one that was dropped, whichever
// notices first (the channel's writer or the connection's end).
type Staller interface {
	Stalled() error
}

// Memory is the daemon's memory budget as the registry uses it: a queued
// message holds its bytes there from its push until it is written or its
// channel ends, so the queues of a listener that does not read are
// bounded with everything else the daemon holds for its clients, not
// only per channel (a listener may hold MaxPerListener channels).
type Memory interface {
	// Hold takes n bytes at once, or fails with a reason for people
	// naming the budget (no waiting: a full queue answers busy at once).
	Hold(n int) (Held, error)
}

// Held is bytes taken from Memory; Release gives them back, and later
// calls do nothing.
type Held interface{ Release() }

// Registry holds the channels and the asks waiting for a reply through
// them. It is safe for concurrent use.
type Registry struct {
	queueCap   atomic.Int64 // messages per channel queue; config reload changes it
	askTimeout atomic.Int64 // an ask's deadline when it gives none; see SetAskTimeout
	queueBytes int          // bytes per channel queue
	// memory, when set, holds every queued message's bytes (SetMemory).
	memory Memory

	// onDrop, when set, is told of every listener that leaves with
	// messages still queued or is dropped for not reading (the daemon logs
	// it); set before use, see OnDrop.
	onDrop func(DropInfo)

	mu        sync.Mutex
	byID      map[string]*channel
	bySession map[string]*channel
	byCC      map[string]*channel
	byConn    map[Listener]map[string]*channel
	asks      map[string]*pendingAsk
	// dropped remembers, by id, the channels whose listener was dropped
	// for not reading: channel.list shows them (DroppedKeep) and a new
	// registration of the id carries the count on.
	dropped map[string]*droppedChannel
}

// droppedChannel is what is kept of a channel whose listener was dropped.
type droppedChannel struct {
	row Row // as listed, with DroppedAt set
}

// DropInfo describes a listener whose channels ended with messages not
// written to it.
type DropInfo struct {
	Listener Peer
	// Channels are the ids of the listener's channels that ended.
	Channels []string
	// Undelivered counts the messages queued for them that were never
	// written.
	Undelivered int
	// Stalled is true when the listener was dropped because it did not
	// read within the write timeout (Err says so); false when its
	// connection ended by itself.
	Stalled bool
	Err     error
}

// SetMemory makes every queued message hold its bytes in m until it is
// written or dropped; past m's room a push is busy. Call it before the
// registry is used; without it only the per-channel bounds apply.
func (r *Registry) SetMemory(m Memory) { r.memory = m }

// OnDrop sets the function told of listeners that leave with messages
// queued or are dropped for not reading. Call it before the registry is
// used.
func (r *Registry) OnDrop(f func(DropInfo)) { r.onDrop = f }

// NewRegistry returns an empty registry with the default queue bound.
func NewRegistry() *Registry {
	r := &Registry{
		queueBytes: DefaultQueueBytes,
		byID:       map[string]*channel{}, bySession: map[string]*channel{}, byCC: map[string]*channel{},
		byConn: map[Listener]map[string]*channel{}, asks: map[string]*pendingAsk{},
		dropped: map[string]*droppedChannel{},
	}
	r.queueCap.Store(DefaultQueue)
	r.askTimeout.Store(int64(DefaultAskTimeout))
	return r
}

// SetAskTimeout sets the deadline of an ask through a channel that gives
// none (the daemon passes its config's ask_timeout, as it does to the
// sessions); not positive is DefaultAskTimeout.
func (r *Registry) SetAskTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultAskTimeout
	}
	r.askTimeout.Store(int64(d))
}

// AskTimeout is the deadline of an ask through a channel that gives none.
func (r *Registry) AskTimeout() time.Duration { return time.Duration(r.askTimeout.Load()) }

// SetQueueCap changes the queue bound of every channel; zero or less
// restores the default.
func (r *Registry) SetQueueCap(n int) {
	if n <= 0 {
		n = DefaultQueue
	}
	r.queueCap.Store(int64(n))
}

// channel is one registered channel.
type channel struct {
	id, session, cc, desc string
	conn                  Listener
	reg                   *Registry
	registered            time.Time
	gone                  chan struct{} // closed when the channel ends
	droppedBefore         uint64        // messages lost with earlier listeners of this id

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
	lost        int                  // messages whose write failed
}

// delivery is one pushed message on its way to the listener.
type delivery struct {
	msg  Message
	size int
	// held is the message's bytes in the registry's Memory, released once
	// the message is written or its channel ends (by whichever of
	// writeLoop and end has it); nil without Memory.
	held Held
	done chan struct{} // closed once written or failed; then written is final
	// written is set before done is closed.
	written bool
	ackDone chan struct{} // with ack: closed on acknowledgement
}

func randomID(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Register adds a channel for l. sessionOfPeer names the session the
// listener's process says it runs in, for a registration that gives a
// cc_session_id but no session ("" when none). Binding a channel to a
// session is an act of authority (asks to the session then go to l), so
// before it mayBind must vouch that the caller runs inside that session;
// its error (a reason for people) makes the registration ErrDenied. A nil
// mayBind vouches for nobody. first is true when it is l's first channel:
// the caller then arranges DropListener for when l's connection ends.
func (r *Registry) Register(l Listener, p Registration, sessionOfPeer func() string, mayBind func(session string) error) (res *Registered, first bool, err error) {
	if p.ID == "" {
		p.ID = randomID("ch-")
	} else if err := ValidID(p.ID); err != nil {
		return nil, false, errorf(ErrInvalid, "%v", err)
	}
	if p.Session != "" && !limits.ValidName(p.Session) {
		return nil, false, errorf(ErrInvalid, "session %.70q is not a session name: names match [a-z0-9][a-z0-9._-]{0,62}", p.Session)
	}
	if p.CCSessionID != "" {
		if err := ValidID(p.CCSessionID); err != nil {
			return nil, false, errorf(ErrInvalid, "cc_session_id %.70q: ids are 1 to %d characters of A-Z a-z 0-9 . _ : -", p.CCSessionID, MaxIDLen)
		}
		if p.Session == "" {
			if p.Session = sessionOfPeer(); !limits.ValidName(p.Session) {
				p.Session = ""
			}
		}
	}
	if len(p.Description) > MaxDescription || !utf8.ValidString(p.Description) {
		return nil, false, errorf(ErrInvalid, "description is %d bytes; give at most %d bytes of UTF-8", len(p.Description), MaxDescription)
	}
	if p.CCSessionID != "" && p.Session == "" {
		// A cc_session_id names an agent's own session, and pushes and asks
		// for that id then reach l: the same authority as a session's name,
		// so the same proof, which only a session can give.
		return nil, false, errorf(ErrDenied, "binding a channel by cc_session_id %.70q needs proof that the caller runs inside an agentd session, and the caller claims none; register from a process of the session (it has AGENTD_SESSION), or name the session and give its %s (session_token)", p.CCSessionID, TokenEnv)
	}
	if p.Session != "" {
		why := fmt.Errorf("no proof was checked")
		if mayBind != nil {
			why = mayBind(p.Session)
		}
		if why != nil {
			return nil, false, errorf(ErrDenied, "binding a channel to session %q needs proof that the caller runs inside it: %v; register from a process of the session, or give its %s (session_token)", p.Session, why, TokenEnv)
		}
	}
	ch := &channel{id: p.ID, session: p.Session, cc: p.CCSessionID, desc: p.Description,
		conn: l, reg: r, registered: time.Now(), gone: make(chan struct{})}
	first, err = r.add(ch)
	if err != nil {
		return nil, false, err
	}
	return &Registered{ID: ch.id, Session: ch.session, CCSessionID: ch.cc, QueueCap: int(r.queueCap.Load())}, first, nil
}

// add registers ch; first is true when it is its listener's first channel.
func (r *Registry) add(ch *channel) (first bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.byID[ch.id]; o != nil {
		return false, errorf(ErrBusy, "channel %q is held by %s; it is free again when that connection ends, or register without an id to get a new one", ch.id, o.conn)
	}
	if o := r.bySession[ch.session]; ch.session != "" && o != nil {
		return false, errorf(ErrBusy, "session %q already has channel %q (%s); a session has one channel at a time", ch.session, o.id, o.conn)
	}
	if o := r.byCC[ch.cc]; ch.cc != "" && o != nil {
		return false, errorf(ErrBusy, "cc_session_id %q is already bound to channel %q (%s)", ch.cc, o.id, o.conn)
	}
	mine := r.byConn[ch.conn]
	if len(mine) >= MaxPerListener {
		return false, errorf(ErrBusy, "this connection already holds %d channels, the limit per connection; unregister some or use another connection", len(mine))
	}
	if len(r.byID) >= MaxChannels {
		return false, errorf(ErrBusy, "agentd already has %d channels, its limit; retry when some have ended", len(r.byID))
	}
	if mine == nil {
		mine = map[string]*channel{}
		r.byConn[ch.conn] = mine
		first = true
	}
	mine[ch.id] = ch
	r.byID[ch.id] = ch
	if d := r.dropped[ch.id]; d != nil {
		ch.droppedBefore = d.row.Dropped
		delete(r.dropped, ch.id)
	}
	if ch.session != "" {
		r.bySession[ch.session] = ch
	}
	if ch.cc != "" {
		r.byCC[ch.cc] = ch
	}
	return first, nil
}

// removeLocked takes ch out of the maps; the caller ends it.
func (r *Registry) removeLocked(ch *channel) {
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

// DropListener ends every channel of a listener whose connection ended.
// Messages still queued are lost (their pushes were answered when queued);
// OnDrop's function is told how many.
//
// A listener whose connection was cut because it did not read within the
// write timeout (Staller) is dropped: its channels are remembered as
// dropped, with the messages they lost, for channel.list (DroppedKeep).
func (r *Registry) DropListener(l Listener) {
	var stall error
	if s, ok := l.(Staller); ok {
		stall = s.Stalled()
	}
	r.mu.Lock()
	mine := r.byConn[l]
	delete(r.byConn, l)
	var chs []*channel
	for _, ch := range mine {
		r.removeLocked(ch)
		chs = append(chs, ch)
	}
	r.mu.Unlock()
	if len(chs) == 0 {
		return
	}
	sort.Slice(chs, func(i, j int) bool { return chs[i].id < chs[j].id })
	info := DropInfo{Listener: l.ChannelPeer(), Stalled: stall != nil, Err: stall}
	now := time.Now()
	for _, ch := range chs {
		// The row is taken before end() empties the queue.
		row := ch.row(r)
		n := ch.end()
		info.Channels = append(info.Channels, ch.id)
		info.Undelivered += n
		if stall == nil {
			continue
		}
		row.Dropped += uint64(n)
		row.QueueDepth = 0
		row.PendingAsks = 0
		at := now.UTC()
		row.DroppedAt = &at
		r.remember(&droppedChannel{row: row})
	}
	if r.onDrop != nil && (info.Stalled || info.Undelivered > 0) {
		r.onDrop(info)
	}
}

// remember keeps a dropped channel's row, unless a listener registered the
// id meanwhile; the oldest rows go first past MaxChannels.
func (r *Registry) remember(d *droppedChannel) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID[d.row.ID] != nil {
		return
	}
	r.expireLocked(time.Now())
	if len(r.dropped) >= MaxChannels {
		var oldest *droppedChannel
		for _, o := range r.dropped {
			if oldest == nil || o.row.DroppedAt.Before(*oldest.row.DroppedAt) {
				oldest = o
			}
		}
		delete(r.dropped, oldest.row.ID)
	}
	r.dropped[d.row.ID] = d
}

// expireLocked forgets dropped channels older than DroppedKeep.
func (r *Registry) expireLocked(now time.Time) {
	for id, d := range r.dropped {
		if now.Sub(*d.row.DroppedAt) > DroppedKeep {
			delete(r.dropped, id)
		}
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
	lost := len(rest) + ch.lost
	ch.queue, ch.head, ch.queuedBytes = nil, 0, 0
	ch.acks = nil
	ch.mu.Unlock()
	for _, dv := range rest {
		dv.release()
		close(dv.done)
	}
	close(ch.gone)
	return lost
}

// Unregister ends l's channel id; it returns how many queued messages were
// not written.
func (r *Registry) Unregister(l Listener, id string) (*Unregistered, error) {
	r.mu.Lock()
	ch := r.byID[id]
	if ch == nil {
		r.mu.Unlock()
		return nil, errorf(ErrUnknown, "no channel %.140q is registered; agentctl channel list shows the channels", id)
	}
	if ch.conn != l {
		r.mu.Unlock()
		return nil, errorf(ErrDenied, "channel %q belongs to %s; only the connection that registered it may unregister it", ch.id, ch.conn)
	}
	r.removeLocked(ch)
	r.mu.Unlock()
	n := ch.end()
	return &Unregistered{ID: ch.id, Undelivered: n}, nil
}

// find looks a channel up by id or by the session it is bound to (name or
// cc_session_id).
func (r *Registry) find(id, sess string) (*channel, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != "" {
		if ch := r.byID[id]; ch != nil {
			return ch, nil
		}
		if d := r.dropped[id]; d != nil {
			return nil, errorf(ErrUnknown, "channel %q has no listener: pid %d was dropped at %s for not reading its messages (%d lost); the id is free for a new listener",
				id, d.row.Listener.PID, d.row.DroppedAt.Format(time.RFC3339), d.row.Dropped)
		}
		return nil, errorf(ErrUnknown, "no channel %.140q is registered; agentctl channel list shows the channels", id)
	}
	if ch := r.bySession[sess]; ch != nil {
		return ch, nil
	}
	if ch := r.byCC[sess]; ch != nil {
		return ch, nil
	}
	return nil, errorf(ErrUnknown, "no channel is bound to session %.140q; agentctl channel list shows the channels", sess)
}

// enqueue takes a message into the channel's queue and starts the writer
// if none runs. It fails ErrBusy when the queue is full and ErrUnknown when
// the channel has ended.
func (r *Registry) enqueue(ch *channel, from Peer, msg json.RawMessage, ack bool) (*delivery, error) {
	dv := &delivery{size: len(msg), done: make(chan struct{})}
	if ack {
		dv.ackDone = make(chan struct{})
	}
	if r.memory != nil {
		// Taken before the channel's lock, given back if the queue
		// refuses the message.
		h, err := r.memory.Hold(queuedSize(dv.size))
		if err != nil {
			return nil, errorf(ErrBusy, "channel %q: the message of %d bytes was not queued: %v", ch.id, dv.size, err)
		}
		dv.held = h
	}
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		dv.release()
		return nil, errorf(ErrUnknown, "channel %q has ended", ch.id)
	}
	depth := len(ch.queue) - ch.head
	if queued := ch.queuedBytes; depth >= int(r.queueCap.Load()) || (depth > 0 && queued+dv.size > r.queueBytes) {
		ch.mu.Unlock()
		dv.release()
		return nil, errorf(ErrBusy, "channel %q has %d messages (%d bytes) waiting for its listener, its limit; retry later", ch.id, depth, queued)
	}
	ch.lastSeq++
	ch.pushed++
	dv.msg = Message{ChannelID: ch.id, Seq: ch.lastSeq, From: from, Body: msg, SentAt: time.Now().UTC(), Ack: ack}
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

// queuedSize is what a queued message of n bytes holds: its body, and its
// delivery and message records.
func queuedSize(n int) int { return n + 256 }

// release gives the message's bytes back to the registry's Memory.
func (dv *delivery) release() {
	if dv.held != nil {
		dv.held.Release()
	}
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

		err := ch.conn.Deliver(&dv.msg)
		// Written or lost, the body is no longer needed (an ack waits
		// for the seq only), and its bytes go back to the budget.
		dv.msg.Body = nil
		dv.release()

		ch.mu.Lock()
		if !ch.closed {
			ch.queuedBytes -= dv.size
		}
		if err == nil {
			dv.written = true
			ch.delivered++
		} else {
			ch.lost++ // the message being written when the listener failed
		}
		ch.mu.Unlock()
		close(dv.done)
		if err != nil {
			// A failed write closes the connection, and the daemon calls
			// DropListener when it sees the end; ending the channels here
			// as well spares pushes the wait. Whichever comes first ends
			// them, the other finds nothing left.
			ch.reg.DropListener(ch.conn)
			return
		}
	}
}

// Push queues p's message on its channel and waits until it is written,
// and with p.Ack until it is acknowledged, at most p.Timeout (zero is
// DefaultPushAckTimeout) for the acknowledgement. from is the pusher. When
// ctx ends first, Push returns ctx.Err().
func (r *Registry) Push(ctx context.Context, from Peer, p PushRequest) (*PushResult, error) {
	if (p.ID == "") == (p.Session == "") {
		return nil, errorf(ErrInvalid, "name the channel by channel_id or by session, exactly one of them")
	}
	if len(p.Message) == 0 {
		return nil, errorf(ErrInvalid, "message is missing; give any JSON value, e.g. \"text\" or {\"k\": 1}")
	}
	if len(p.Message) > MaxMessage {
		return nil, errorf(ErrInvalid, "message is %d bytes, over the limit of %d; send a path or a reference instead", len(p.Message), MaxMessage)
	}
	if p.Timeout < 0 {
		return nil, errorf(ErrInvalid, "timeout %s is negative; give zero (the default) or more", p.Timeout)
	}
	timeout := p.Timeout
	if timeout == 0 {
		timeout = DefaultPushAckTimeout
	}
	ch, err := r.find(p.ID, p.Session)
	if err != nil {
		return nil, err
	}
	// The message is kept as sent: the daemon has checked it is JSON.
	msg := append(json.RawMessage(nil), p.Message...)
	var deadline <-chan time.Time
	if p.Ack {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	dv, err := r.enqueue(ch, from, msg, p.Ack)
	if err != nil {
		return nil, err
	}
	timedOut := func(written bool) error {
		ch.forgetAck(dv)
		return &PushTimeoutError{ChannelID: ch.id, Seq: dv.msg.Seq, Written: written, Timeout: timeout}
	}
	res := &PushResult{ID: ch.id, Seq: dv.msg.Seq, Routed: true, Queued: true}
	if !p.Ack {
		// Delivery is asynchronous: a pusher never waits on a listener's
		// socket, whatever the listener does.
		return res, nil
	}
	select {
	case <-dv.done:
	case <-deadline:
		// Still queued: it will be written, but not acknowledged in time.
		return nil, timedOut(false)
	case <-ctx.Done():
		ch.forgetAck(dv)
		return nil, ctx.Err()
	}
	if !dv.written {
		res.Detail = "the listener's connection ended before the message was written to it"
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

// Ack releases l's pushes with ack on channel id up to and including seq.
func (r *Registry) Ack(l Listener, id string, seq uint64) (*AckResult, error) {
	if id == "" {
		return nil, errorf(ErrInvalid, "channel_id is missing")
	}
	ch, err := r.find(id, "")
	if err != nil {
		return nil, err
	}
	if ch.conn != l {
		return nil, errorf(ErrDenied, "channel %q belongs to %s; only its listener may acknowledge its messages", ch.id, ch.conn)
	}
	n, err := ch.ack(seq)
	if err != nil {
		return nil, err
	}
	return &AckResult{ID: ch.id, Seq: seq, Released: n}, nil
}

// ack releases the pushes with ack up to and including seq.
func (ch *channel) ack(seq uint64) (int, error) {
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return 0, errorf(ErrUnknown, "channel %q has ended", ch.id)
	}
	if seq > ch.lastSeq {
		last := ch.lastSeq
		ch.mu.Unlock()
		return 0, errorf(ErrInvalid, "channel %q has no message %d yet (the last is %d)", ch.id, seq, last)
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

// List describes every channel, by id.
func (r *Registry) List() []Row {
	r.mu.Lock()
	chs := make([]*channel, 0, len(r.byID))
	for _, ch := range r.byID {
		chs = append(chs, ch)
	}
	r.mu.Unlock()
	rows := make([]Row, 0, len(chs))
	for _, ch := range chs {
		rows = append(rows, ch.row(r))
	}
	r.mu.Lock()
	r.expireLocked(time.Now())
	for _, d := range r.dropped {
		rows = append(rows, d.row)
	}
	r.mu.Unlock()
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	return rows
}

// row describes a live channel for channel.list.
func (ch *channel) row(r *Registry) Row {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return Row{ID: ch.id, Session: ch.session, CCSessionID: ch.cc, Description: ch.desc,
		Listener: ch.conn.ChannelPeer(), QueueDepth: len(ch.queue) - ch.head, QueueCap: int(r.queueCap.Load()),
		Pushed: ch.pushed, Delivered: ch.delivered, Dropped: ch.droppedBefore, PendingAsks: ch.asks, RegisteredAt: ch.registered}
}

// Holds says whether l holds a channel: its connection is in use even with
// no request in flight, and must not be closed as idle.
func (r *Registry) Holds(l Listener) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byConn[l]) > 0
}
