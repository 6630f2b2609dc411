package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentd/agentd/pkg/channel"
	"github.com/agentd/agentd/pkg/wire"
)

// testListener is a connection holding channels; it records every message
// it is sent and, with autoAck, acknowledges each from its own goroutine.
type testListener struct {
	t    *testing.T
	c    *wire.Client
	gate chan struct{} // when set, notifications wait until it is closed

	mu   sync.Mutex
	msgs []wire.ChannelMessage
	acks chan wire.ChannelMessage
}

func newListener(t *testing.T, td *testDaemon, autoAck bool, gate chan struct{}) *testListener {
	t.Helper()
	l := &testListener{t: t, gate: gate}
	if autoAck {
		l.acks = make(chan wire.ChannelMessage, 1<<16)
	}
	c, err := wire.Dial(context.Background(), td.socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
		if l.gate != nil {
			<-l.gate
		}
		if n.Method != wire.NotifyChannelMessage {
			return
		}
		var m wire.ChannelMessage
		if err := json.Unmarshal(n.Params, &m); err != nil {
			t.Errorf("undecodable channel message %s: %v", n.Params, err)
			return
		}
		l.mu.Lock()
		l.msgs = append(l.msgs, m)
		l.mu.Unlock()
		if l.acks != nil {
			l.acks <- m
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	l.c = c
	t.Cleanup(func() { c.Close() })
	if autoAck {
		go func() {
			for {
				select {
				case m := <-l.acks:
					c.AckChannel(context.Background(), m.ChannelID, m.Seq)
				case <-c.Done():
					return
				}
			}
		}()
	}
	return l
}

func (l *testListener) register(p wire.RegisterChannelParams) *wire.RegisterChannelResult {
	l.t.Helper()
	r, err := l.c.RegisterChannel(context.Background(), p)
	if err != nil {
		l.t.Fatalf("register %+v: %v", p, err)
	}
	return r
}

func (l *testListener) received() []wire.ChannelMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]wire.ChannelMessage(nil), l.msgs...)
}

func (l *testListener) await(n int) []wire.ChannelMessage {
	l.t.Helper()
	await(l.t, 10*time.Second, fmt.Sprintf("%d channel messages", n), func() bool { return len(l.received()) >= n })
	return l.received()
}

func wantCode(t *testing.T, what string, err error, code wire.Code) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Errorf("%s: got %v, want %s", what, err, code)
	} else if we.Message == "" {
		t.Errorf("%s: %s error has no message", what, code)
	}
}

func TestChannelRegisterPushList(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{})
	l := newListener(t, td, false, nil)
	gen := l.register(wire.RegisterChannelParams{})
	if !strings.HasPrefix(gen.ChannelID, "ch-") || channel.ValidID(gen.ChannelID) != nil || gen.QueueCap != channel.DefaultQueue {
		t.Errorf("generated registration = %+v, want a valid ch- id and queue cap %d", gen, channel.DefaultQueue)
	}
	named := l.register(wire.RegisterChannelParams{ChannelID: "svc:alerts-1", Session: "w1", CCSessionID: "0b7e-cc", Description: "alerts"})
	if named.ChannelID != "svc:alerts-1" || named.Session != "w1" || named.CCSessionID != "0b7e-cc" {
		t.Errorf("named registration = %+v", named)
	}

	pusher := td.client(t)
	ctx := context.Background()
	for i, p := range []wire.PushParams{
		{ChannelID: "svc:alerts-1", Message: json.RawMessage(`{"n":1}`)},
		{Session: "w1", Message: json.RawMessage(`"by session"`)},
		{Session: "0b7e-cc", Message: json.RawMessage(`[1,2]`)},
		{ChannelID: "svc:alerts-1", Message: json.RawMessage(`null`), Ack: true},
	} {
		done := make(chan struct{})
		if p.Ack {
			go func() {
				defer close(done)
				m := l.await(4)[3]
				if _, err := l.c.AckChannel(ctx, m.ChannelID, m.Seq); err != nil {
					t.Errorf("ack: %v", err)
				}
			}()
		} else {
			close(done)
		}
		r, err := pusher.PushToChannel(ctx, p)
		<-done
		if err != nil {
			t.Fatalf("push %d %+v: %v", i, p, err)
		}
		if !r.Routed || !r.Queued || r.Delivered != p.Ack || r.Seq != uint64(i+1) || r.ChannelID != "svc:alerts-1" {
			t.Errorf("push %d answered %+v, want routed and queued seq %d, delivered only with ack", i, r, i+1)
		}
	}
	msgs := l.received()
	exe, _ := os.Executable()
	wantBodies := []string{`{"n":1}`, `"by session"`, `[1,2]`, `null`}
	for i, m := range msgs {
		if m.ChannelID != "svc:alerts-1" || m.Seq != uint64(i+1) || string(m.Message) != wantBodies[i] ||
			m.From.PID != os.Getpid() || m.From.UID != os.Getuid() || m.From.Exe != exe || time.Since(m.SentAt) > time.Minute {
			t.Errorf("message %d = %+v, want seq %d body %s from this process", i, m, i+1, wantBodies[i])
		}
	}
	if len(msgs) != 4 || !msgs[3].Ack || msgs[0].Ack {
		t.Errorf("got %d messages (%+v), want 4, only the last asking for an ack", len(msgs), msgs)
	}

	list, err := pusher.ListChannels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Channels) != 2 {
		t.Fatalf("list = %+v, want 2 channels", list)
	}
	row := list.Channels[1]
	if row.ChannelID != "svc:alerts-1" || row.Session != "w1" || row.Listener.PID != os.Getpid() || row.Listener.Exe != exe ||
		row.Delivered != 4 || row.Pushed != 4 || row.QueueDepth != 0 || row.Description != "alerts" {
		t.Errorf("list row = %+v, want svc:alerts-1 bound to w1 with 4 delivered", row)
	}

	// Unregistering frees the id and the session for someone else.
	if r, err := l.c.UnregisterChannel(ctx, "svc:alerts-1"); err != nil || r.Undelivered != 0 {
		t.Fatalf("unregister: %+v %v", r, err)
	}
	_, err = pusher.PushToChannel(ctx, wire.PushParams{ChannelID: "svc:alerts-1", Message: json.RawMessage(`1`)})
	wantCode(t, "push after unregister", err, wire.CodeChannelUnknown)
	other := newListener(t, td, false, nil)
	other.register(wire.RegisterChannelParams{ChannelID: "svc:alerts-1", Session: "w1"})
}

func TestChannelBadInput(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{})
	owner := newListener(t, td, false, nil)
	owner.register(wire.RegisterChannelParams{ChannelID: "mine", Session: "bound"})
	c := td.client(t)
	ctx := context.Background()
	big := json.RawMessage(`"` + strings.Repeat("x", wire.MaxChannelMessage-1) + `"`) // 64 KiB + 1
	exact := big[:0:0]
	exact = append(exact, big[:len(big)-2]...)
	exact = append(exact, '"') // exactly 64 KiB
	cases := []struct {
		name   string
		method string
		params any
		code   wire.Code
	}{
		{"message over 64 KiB", wire.MethodPushToChannel, wire.PushParams{ChannelID: "mine", Message: big}, wire.CodeInvalidParams},
		{"message absent", wire.MethodPushToChannel, map[string]any{"channel_id": "mine"}, wire.CodeInvalidParams},
		{"neither id nor session", wire.MethodPushToChannel, map[string]any{"message": 1}, wire.CodeInvalidParams},
		{"both id and session", wire.MethodPushToChannel, map[string]any{"channel_id": "mine", "session": "bound", "message": 1}, wire.CodeInvalidParams},
		{"unknown channel", wire.MethodPushToChannel, wire.PushParams{ChannelID: "nobody", Message: json.RawMessage(`1`)}, wire.CodeChannelUnknown},
		{"unknown session", wire.MethodPushToChannel, wire.PushParams{Session: "ghost", Message: json.RawMessage(`1`)}, wire.CodeChannelUnknown},
		{"negative timeout", wire.MethodPushToChannel, wire.PushParams{ChannelID: "mine", Message: json.RawMessage(`1`), Ack: true, TimeoutMS: -1}, wire.CodeInvalidParams},
		{"unknown field", wire.MethodPushToChannel, map[string]any{"channel_id": "mine", "message": 1, "acks": true}, wire.CodeInvalidParams},
		{"unregister someone else's", wire.MethodUnregisterChannel, wire.UnregisterChannelParams{ChannelID: "mine"}, wire.CodePermissionDenied},
		{"unregister unknown", wire.MethodUnregisterChannel, wire.UnregisterChannelParams{ChannelID: "nobody"}, wire.CodeChannelUnknown},
		{"ack someone else's", wire.MethodChannelAck, wire.ChannelAckParams{ChannelID: "mine", Seq: 1}, wire.CodePermissionDenied},
		{"ack without id", wire.MethodChannelAck, wire.ChannelAckParams{Seq: 1}, wire.CodeInvalidParams},
		{"id of 1000 characters", wire.MethodRegisterChannel, wire.RegisterChannelParams{ChannelID: strings.Repeat("a", 1000)}, wire.CodeInvalidParams},
		{"id with control characters", wire.MethodRegisterChannel, wire.RegisterChannelParams{ChannelID: "a\x00b\x1b[31m"}, wire.CodeInvalidParams},
		{"id with a space", wire.MethodRegisterChannel, wire.RegisterChannelParams{ChannelID: "a b"}, wire.CodeInvalidParams},
		{"id with a slash", wire.MethodRegisterChannel, wire.RegisterChannelParams{ChannelID: "../x"}, wire.CodeInvalidParams},
		{"bad session name", wire.MethodRegisterChannel, wire.RegisterChannelParams{Session: "A/B"}, wire.CodeInvalidParams},
		{"bad cc_session_id", wire.MethodRegisterChannel, wire.RegisterChannelParams{CCSessionID: "x\ny"}, wire.CodeInvalidParams},
		{"huge description", wire.MethodRegisterChannel, wire.RegisterChannelParams{Description: strings.Repeat("d", 5000)}, wire.CodeInvalidParams},
		{"id held by a live connection", wire.MethodRegisterChannel, wire.RegisterChannelParams{ChannelID: "mine"}, wire.CodeBusy},
		{"session bound by a live connection", wire.MethodRegisterChannel, wire.RegisterChannelParams{Session: "bound"}, wire.CodeBusy},
		{"reply to an unknown ask", wire.MethodChannelReply, wire.ChannelReplyParams{AskID: "ask-nope", Text: "x"}, wire.CodeInvalidParams},
	}
	for _, tc := range cases {
		err := c.Call(ctx, tc.method, tc.params, nil)
		wantCode(t, tc.name, err, tc.code)
	}
	// Exactly 64 KiB is accepted.
	if r, err := c.PushToChannel(ctx, wire.PushParams{ChannelID: "mine", Message: exact}); err != nil || !r.Queued || len(exact) != wire.MaxChannelMessage {
		t.Errorf("push of exactly %d bytes: %+v %v, want queued", len(exact), r, err)
	}
	// Acknowledging a message that was never sent is refused.
	_, err := owner.c.AckChannel(ctx, "mine", 99)
	wantCode(t, "ack of a future seq", err, wire.CodeInvalidParams)
	// The owner is still registered and served.
	if l, err := c.ListChannels(ctx); err != nil || len(l.Channels) != 1 {
		t.Errorf("after bad input: list %+v %v, want the one channel", l, err)
	}
}

func TestChannelLimits(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{})
	ctx := context.Background()
	one := td.client(t)
	var ok, busy int
	for i := 0; i < 10000; i++ {
		_, err := one.RegisterChannel(ctx, wire.RegisterChannelParams{})
		switch {
		case err == nil:
			ok++
		case errors.Is(err, wire.ErrBusy):
			busy++
		default:
			t.Fatalf("register %d: %v", i, err)
		}
	}
	if ok != channel.MaxPerListener || busy != 10000-channel.MaxPerListener {
		t.Errorf("10000 registrations on one connection: %d ok, %d busy; want %d ok", ok, busy, channel.MaxPerListener)
	}
	// The daemon-wide limit: fill it from more connections.
	for n := channel.MaxPerListener; n < channel.MaxChannels; n += channel.MaxPerListener {
		c := td.client(t)
		for i := 0; i < channel.MaxPerListener; i++ {
			if _, err := c.RegisterChannel(ctx, wire.RegisterChannelParams{}); err != nil {
				t.Fatalf("registration %d: %v", n+i, err)
			}
		}
	}
	_, err := td.client(t).RegisterChannel(ctx, wire.RegisterChannelParams{})
	wantCode(t, "registration past the daemon's limit", err, wire.CodeBusy)
	// A connection that ends frees its channels.
	one.Close()
	await(t, 5*time.Second, "channels freed", func() bool {
		_, err := td.client(t).RegisterChannel(ctx, wire.RegisterChannelParams{})
		return err == nil
	})
}

// pushOutcome is one push as its caller saw it.
type pushOutcome struct {
	body      string
	seq       uint64
	delivered bool
	err       error
}

// checkDelivery holds the channel contract against what a listener
// received: messages in seq order, each once, each the body of the push
// that got that seq; every push reported delivered was received. Without
// ack (acked false) delivered means written to the listener's socket, so
// messages written after the listener stopped reading (seq past the last
// it read) may be reported delivered and never read.
func checkDelivery(t *testing.T, got []wire.ChannelMessage, pushes []pushOutcome, acked bool) {
	t.Helper()
	bySeq := map[uint64]pushOutcome{}
	for _, p := range pushes {
		if p.err == nil {
			bySeq[p.seq] = p
		}
	}
	seen := map[uint64]bool{}
	var last uint64
	for _, m := range got {
		if m.Seq <= last {
			t.Errorf("message seq %d after %d: out of order or repeated", m.Seq, last)
		}
		last = m.Seq
		seen[m.Seq] = true
		if p, ok := bySeq[m.Seq]; !ok || p.body != string(m.Message) {
			t.Errorf("message %d is %s, want the body of the push that got seq %d (%+v)", m.Seq, m.Message, m.Seq, p)
		}
	}
	for _, p := range pushes {
		if p.err == nil && p.delivered && !seen[p.seq] && (acked || p.seq <= last) {
			t.Errorf("push of %s answered delivered seq %d, but the listener never got it", p.body, p.seq)
		}
	}
}

func TestChannelListenerDisconnectsMidStream(t *testing.T) {
	t.Parallel()
	for _, ack := range []bool{false, true} {
		t.Run(fmt.Sprintf("ack=%v", ack), func(t *testing.T) {
			t.Parallel()
			td := startDaemon(t, Config{})
			l := newListener(t, td, true, nil)
			l.register(wire.RegisterChannelParams{ChannelID: "stream"})
			ctx := context.Background()
			const pushers = 4
			var mu sync.Mutex
			var pushes []pushOutcome
			var wg sync.WaitGroup
			for w := 0; w < pushers; w++ {
				c := td.client(t)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						body := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)
						r, err := c.PushToChannel(ctx, wire.PushParams{ChannelID: "stream", Message: json.RawMessage(body), Ack: ack, TimeoutMS: 10000})
						o := pushOutcome{body: body, err: err}
						if r != nil {
							// Without ack a push answers once queued.
							o.seq, o.delivered = r.Seq, r.Delivered || (!ack && r.Queued)
						}
						mu.Lock()
						pushes = append(pushes, o)
						mu.Unlock()
						if err != nil {
							if !errors.Is(err, wire.ErrChannelUnknown) {
								t.Errorf("push: %v, want success or channel_unknown", err)
							}
							return
						}
					}
				}()
			}
			l.await(200)
			l.c.Close() // mid-stream
			wg.Wait()
			got := l.received()
			checkDelivery(t, got, pushes, ack)
			var delivered, undelivered, unknown int
			for _, p := range pushes {
				switch {
				case p.err != nil:
					unknown++
				case p.delivered:
					delivered++
				default:
					undelivered++
				}
			}
			if unknown != pushers || delivered < 200-pushers {
				t.Errorf("%d pushes delivered, %d not, %d channel_unknown; want about 200 delivered and every pusher ending channel_unknown",
					delivered, undelivered, unknown)
			}
			// Every later push is channel_unknown too.
			_, err := td.client(t).PushToChannel(ctx, wire.PushParams{ChannelID: "stream", Message: json.RawMessage(`1`)})
			wantCode(t, "push after the listener left", err, wire.CodeChannelUnknown)
		})
	}
}

// TestChannelSlowListener: a listener that does not read fills its socket,
// then its queue; pushes are queued without waiting for it, then busy at
// once, and the daemon's heap stays flat; once it reads, every queued
// message arrives in order. It is not parallel: it measures the heap.
func TestChannelSlowListener(t *testing.T) {
	// The write timeout is far beyond the test, so the listener is never
	// dropped here, however loaded the machine (TestChannelStalledListener
	// is the drop).
	td := startDaemon(t, Config{WriteTimeout: 10 * time.Minute})
	const bound = 16
	td.channels.SetQueueCap(bound)
	gate := make(chan struct{})
	l := newListener(t, td, false, gate)
	l.register(wire.RegisterChannelParams{ChannelID: "slow"})
	ctx := context.Background()
	body := `"` + strings.Repeat("m", 8<<10) + `"`

	// Concurrent pushers fill the socket, then the queue, then are busy.
	var mu sync.Mutex
	var pushes []pushOutcome
	var busy int
	var slowest time.Duration // the longest a push took to answer
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var stopOnce sync.Once
	for w := 0; w < 48; w++ {
		c := td.client(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b := fmt.Sprintf(`{"w":%d,"i":%d,"pad":%s}`, w, i, body)
				// Bounded: a push must never wait for the listener.
				pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				began := time.Now()
				r, err := c.PushToChannel(pctx, wire.PushParams{ChannelID: "slow", Message: json.RawMessage(b)})
				took := time.Since(began)
				cancel()
				mu.Lock()
				slowest = max(slowest, took)
				if errors.Is(err, wire.ErrBusy) {
					busy++
					mu.Unlock()
					stopOnce.Do(func() { close(stop) })
					continue
				}
				o := pushOutcome{body: b, err: err}
				if r != nil {
					o.seq, o.delivered = r.Seq, r.Queued
				}
				pushes = append(pushes, o)
				mu.Unlock()
				if err != nil {
					t.Errorf("push: %v", err)
					return
				}
			}
		}()
	}
	select {
	case <-stop:
	case <-time.After(20 * time.Second):
		t.Fatal("pushes to a listener that does not read never became busy")
	}
	list, err := td.client(t).ListChannels(ctx)
	if err != nil || len(list.Channels) != 1 || list.Channels[0].QueueDepth > bound {
		t.Fatalf("list while busy: %+v %v, want queue depth at most %d", list, err, bound)
	}

	// While the listener is stuck, many more pushes are refused without
	// the daemon's memory growing.
	c := td.client(t)
	small := json.RawMessage(`"x"`)
	// push records a push that was queued, so the delivery check knows its
	// seq, and reports whether it was busy.
	push := func() bool {
		r, err := c.PushToChannel(ctx, wire.PushParams{ChannelID: "slow", Message: small})
		if err == nil {
			mu.Lock()
			pushes = append(pushes, pushOutcome{body: string(small), seq: r.Seq, delivered: r.Queued})
			mu.Unlock()
			return false
		} else if !errors.Is(err, wire.ErrBusy) {
			t.Fatalf("push to a full queue: %v, want busy", err)
		}
		return true
	}
	// Until the listener's socket is full, the writer still moves queued
	// messages into it and a push can find the slot it freed; on a loaded
	// machine the writer lags the pushers by a lot (a run beside other
	// test packages once saw 10 slots freed after 200 busy pushes in a
	// row). Stuck is: at least 200 busy pushes in a row, and none queued
	// for a whole second.
	fullBy := time.Now().Add(30 * time.Second)
	for inARow, lastQueued := 0, time.Now(); inARow < 200 || time.Since(lastQueued) < time.Second; {
		if time.Now().After(fullBy) {
			t.Fatal("the listener's socket never filled: pushes kept being queued")
		}
		if push() {
			inARow++
		} else {
			inARow, lastQueued = 0, time.Now()
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// Bounded in time as well as count, for a loaded race detector.
	refused, tried := 0, 0
	phaseEnd := time.Now().Add(10 * time.Second)
	for ; tried < 5000 && time.Now().Before(phaseEnd); tried++ {
		if push() {
			refused++
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if refused != tried || tried < 200 {
		t.Errorf("%d of %d pushes to a full queue were busy, want all (and at least 200)", refused, tried)
	}
	// The race detector's shadow memory makes the heap figure meaningless.
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 2<<20 && !raceEnabled {
		t.Errorf("heap grew by %d bytes over %d refused pushes, want flat", grew, tried)
	}

	// The listener catches up: everything reported delivered arrives, in order.
	close(gate)
	wg.Wait()
	var delivered int
	for _, p := range pushes {
		if p.delivered {
			delivered++
		}
	}
	got := l.await(delivered)
	checkDelivery(t, got, pushes, true) // the listener never left: all must arrive
	if busy == 0 || delivered == 0 {
		t.Errorf("%d queued, %d busy: want both", delivered, busy)
	}
	t.Logf("%d pushes queued, %d busy, %d of %d refused at once while stuck; slowest push answer %s", delivered, busy, refused, tried, slowest)
}

// TestChannelStalledListener: a listener that stops reading is dropped
// after the write timeout, with a log line and its channel's dropped count
// in channel list; a push to it then says why it is gone; a listener that
// registers the id again takes the row and the count over.
func TestChannelStalledListener(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	td := startDaemon(t, Config{WriteTimeout: time.Second, Logger: zerolog.New(logs)})
	td.channels.SetQueueCap(8)
	gate := make(chan struct{})
	defer close(gate)
	l := newListener(t, td, false, gate)
	l.register(wire.RegisterChannelParams{ChannelID: "stuck"})
	ctx := context.Background()
	c := td.client(t)
	msg := json.RawMessage(`"` + strings.Repeat("m", 60<<10) + `"`)
	queued := 0
	for {
		r, err := c.PushToChannel(ctx, wire.PushParams{ChannelID: "stuck", Message: msg})
		if errors.Is(err, wire.ErrBusy) {
			break
		}
		if errors.Is(err, wire.ErrChannelUnknown) {
			break // a very slow machine: the listener was dropped already
		}
		if err != nil || !r.Queued {
			t.Fatalf("push %d: %+v %v, want queued or busy", queued, r, err)
		}
		queued++
	}
	var row wire.ChannelRow
	await(t, 20*time.Second, "the stalled listener dropped and listed", func() bool {
		list, err := c.ListChannels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Channels) != 1 {
			return false
		}
		row = list.Channels[0]
		return row.DroppedAt != nil
	})
	if row.ChannelID != "stuck" || row.Dropped == 0 || row.Dropped > uint64(queued) || row.Delivered+row.Dropped != uint64(queued) ||
		row.Listener.PID != os.Getpid() {
		t.Errorf("row of the dropped channel = %+v; want stuck, with delivered + dropped = the %d queued, listener pid %d", row, queued, os.Getpid())
	}
	await(t, 10*time.Second, "the drop logged", func() bool {
		return strings.Contains(logs.String(), "channel listener dropped")
	})
	for _, want := range []string{`"level":"warn"`, `"channels":["stuck"]`, fmt.Sprintf(`"dropped":%d`, row.Dropped), `"write_timeout"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
	_, err := c.PushToChannel(ctx, wire.PushParams{ChannelID: "stuck", Message: json.RawMessage(`1`)})
	wantCode(t, "push to the dropped channel", err, wire.CodeChannelUnknown)
	if err != nil && !strings.Contains(err.Error(), "dropped") {
		t.Errorf("push to the dropped channel: %v, want the message to say the listener was dropped", err)
	}

	// A new listener takes the id over, with the count.
	l2 := newListener(t, td, false, nil)
	l2.register(wire.RegisterChannelParams{ChannelID: "stuck"})
	list, err := c.ListChannels(ctx)
	if err != nil || len(list.Channels) != 1 || list.Channels[0].DroppedAt != nil || list.Channels[0].Dropped != row.Dropped {
		t.Errorf("list after a new listener took the id: %+v %v; want one live row with dropped %d", list, err, row.Dropped)
	}
	if r, err := c.PushToChannel(ctx, wire.PushParams{ChannelID: "stuck", Message: json.RawMessage(`2`)}); err != nil || !r.Queued || r.Seq != 1 {
		t.Errorf("push to the new listener: %+v %v", r, err)
	}
	l2.await(1)
}

func TestChannelAckTimeout(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{})
	l := newListener(t, td, false, nil)
	l.register(wire.RegisterChannelParams{ChannelID: "mute"})
	_, err := td.client(t).PushToChannel(context.Background(), wire.PushParams{ChannelID: "mute", Message: json.RawMessage(`1`), Ack: true, TimeoutMS: 100})
	wantCode(t, "push with ack to a listener that does not ack", err, wire.CodeTimeout)
	var we *wire.Error
	var det wire.PushTimeoutDetails
	if errors.As(err, &we) && (json.Unmarshal(we.Details, &det) != nil || !det.Written || det.Seq != 1 || det.ChannelID != "mute") {
		t.Errorf("timeout details %s, want written seq 1 of mute", we.Details)
	}
	// A late ack is harmless; a later push with ack that is acknowledged is delivered.
	if r, err := l.c.AckChannel(context.Background(), "mute", 1); err != nil || r.Released != 0 {
		t.Errorf("late ack: %+v %v, want nothing released", r, err)
	}
}

func TestChannelAsk(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{})
	l := newListener(t, td, false, nil)
	l.register(wire.RegisterChannelParams{ChannelID: "cc", Session: "agent1"})
	ctx := context.Background()
	asker := td.client(t)
	replier := td.client(t)

	type answer struct {
		r   *wire.AskResult
		err error
	}
	ask := func(p wire.AskParams) chan answer {
		ch := make(chan answer, 1)
		go func() { r, err := asker.Ask(ctx, p); ch <- answer{r, err} }()
		return ch
	}
	done := ask(wire.AskParams{Name: "agent1", Text: "what is 6*7?"})
	m := l.await(1)[0]
	var q wire.ChannelAsk
	if err := json.Unmarshal(m.Message, &q); err != nil || q.Kind != "ask" || q.Text != "what is 6*7?" || !strings.HasPrefix(q.AskID, "ask-") {
		t.Fatalf("ask message %s (%v), want {kind: ask, ask_id, text}", m.Message, err)
	}
	// Only the connection holding the channel the ask went to may reply;
	// another one's reply is refused and leaves the ask waiting.
	_, err := replier.ReplyChannel(ctx, wire.ChannelReplyParams{AskID: q.AskID, Text: "43 (spoofed)"})
	wantCode(t, "reply from a connection that does not hold the channel", err, wire.CodePermissionDenied)
	if r, err := l.c.ReplyChannel(ctx, wire.ChannelReplyParams{AskID: q.AskID, Text: "42"}); err != nil || r.Session != "agent1" {
		t.Fatalf("reply: %+v %v", r, err)
	}
	a := <-done
	if a.err != nil || a.r.Reason != "reply" || a.r.Answer != "42" || a.r.Name != "agent1" {
		t.Errorf("ask answered %+v %v, want reason reply, answer 42", a.r, a.err)
	}
	_, err = replier.ReplyChannel(ctx, wire.ChannelReplyParams{AskID: q.AskID, Text: "again"})
	wantCode(t, "second reply to an answered ask", err, wire.CodeInvalidParams)

	// The ask's timeout applies.
	a = <-ask(wire.AskParams{Name: "agent1", Text: "slow", TimeoutMS: 100})
	wantCode(t, "ask with no reply", a.err, wire.CodeTimeout)
	m = l.await(2)[1]
	json.Unmarshal(m.Message, &q)
	_, err = replier.ReplyChannel(ctx, wire.ChannelReplyParams{AskID: q.AskID, Text: "late"})
	wantCode(t, "reply after the ask timed out", err, wire.CodeInvalidParams)

	// via pty ignores the channel (there is no such session, so the
	// terminal path says so); via channel without one is refused.
	a = <-ask(wire.AskParams{Name: "agent1", Text: "x", Via: "pty", TimeoutMS: 1000})
	if a.err == nil || errors.Is(a.err, wire.ErrTimeout) || len(l.received()) != 2 {
		t.Errorf("via pty: %v, and the listener got %d messages; want the terminal path's error and no channel message", a.err, len(l.received()))
	}
	a = <-ask(wire.AskParams{Name: "nochannel", Text: "x", Via: "channel"})
	wantCode(t, "via channel with no channel", a.err, wire.CodeInvalidParams)

	// A channel that ends during an ask fails it.
	done = ask(wire.AskParams{Name: "agent1", Text: "bye"})
	l.await(3)
	l.c.Close()
	a = <-done
	wantCode(t, "ask whose channel ended", a.err, wire.CodeChannelUnknown)
}

func TestChannelDaemonRestart(t *testing.T) {
	t.Parallel()
	dir := shortTempDir(t)
	cfg := Config{SocketPath: dir + "/agentd.sock", StateDir: filepath.Join(t.TempDir(), "state"), ShutdownGrace: 200 * time.Millisecond}
	td := startDaemon(t, cfg)
	l := newListener(t, td, false, nil)
	l.register(wire.RegisterChannelParams{ChannelID: "survivor", Session: "s"})
	pusher := td.client(t)
	// A push with ack that the listener never acknowledges is in flight
	// while the daemon stops: it must not come back delivered.
	res := make(chan error, 1)
	go func() {
		r, err := pusher.PushToChannel(context.Background(), wire.PushParams{ChannelID: "survivor", Message: json.RawMessage(`1`), Ack: true})
		if err == nil && r.Delivered {
			err = fmt.Errorf("push answered delivered: %+v", r)
		} else {
			err = nil
		}
		res <- err
	}()
	l.await(1)
	td.cancel()
	select {
	case err := <-td.done:
		td.done <- err // for the cleanup's check
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not stop")
	}
	select {
	case <-l.c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the listener's connection did not end with the daemon")
	}
	if err := <-res; err != nil {
		t.Error(err)
	}
	td2 := startDaemon(t, cfg)
	l2 := newListener(t, td2, false, nil)
	l2.register(wire.RegisterChannelParams{ChannelID: "survivor", Session: "s"})
	if r, err := td2.client(t).PushToChannel(context.Background(), wire.PushParams{Session: "s", Message: json.RawMessage(`2`)}); err != nil || !r.Queued || r.Seq != 1 {
		t.Errorf("push after re-registering: %+v %v", r, err)
	}
}

// TestChannelIdleMemory is not parallel: it measures the heap.
func TestChannelIdleMemory(t *testing.T) {
	td := startDaemon(t, Config{})
	per := channelIdleBytes(t, td, 1000)
	t.Logf("%.0f bytes of heap per idle channel", per)
	if per > 8<<10 {
		t.Errorf("%.0f bytes per idle channel, want at most 8 KiB", per)
	}
}

// channelIdleBytes registers n channels on n/250 connections and returns
// the heap growth per channel. The clients live in this process too, so
// the figure includes their (small) share.
func channelIdleBytes(t testing.TB, td *testDaemon, n int) float64 {
	ctx := context.Background()
	var clients []*wire.Client
	for i := 0; i < (n+249)/250; i++ {
		c, err := wire.Dial(ctx, td.socket, wire.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		defer c.Close()
		c.Hello(ctx, wire.HelloParams{})
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		if _, err := clients[i%len(clients)].RegisterChannel(ctx, wire.RegisterChannelParams{Session: fmt.Sprintf("s%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// TestChannelFullQueueIsBusy is the always-on check of the queue bound: a
// listener that does not read fills its socket, then its queue, and the
// next push is busy; once it reads, every push that was taken arrives.
func TestChannelFullQueueIsBusy(t *testing.T) {
	t.Parallel()
	td := startDaemon(t, Config{})
	td.channels.SetQueueCap(4)
	gate := make(chan struct{})
	l := newListener(t, td, false, gate)
	l.register(wire.RegisterChannelParams{ChannelID: "full"})
	msg := json.RawMessage(`"` + strings.Repeat("m", 60<<10) + `"`)
	var busy, delivered, other atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 24; i++ {
		c := td.client(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := c.PushToChannel(ctx, wire.PushParams{ChannelID: "full", Message: msg})
			switch {
			case errors.Is(err, wire.ErrBusy):
				busy.Add(1)
			case err == nil && r.Queued:
				delivered.Add(1)
			default:
				other.Add(1)
				t.Errorf("push: %+v %v, want busy or queued", r, err)
			}
		}()
	}
	await(t, 20*time.Second, "a push refused busy at the bound", func() bool { return busy.Load() > 0 })
	close(gate) // the listener reads: everything taken is delivered
	wg.Wait()
	if int(busy.Load()+delivered.Load()) != 24 || other.Load() != 0 {
		t.Errorf("busy %d + delivered %d != 24 pushes (other %d)", busy.Load(), delivered.Load(), other.Load())
	}
	await(t, 10*time.Second, "every delivered push at the listener", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.msgs) == int(delivered.Load())
	})
}
