package wire

import (
	"context"
	"sync"
)

// ChannelAcker acknowledges a channel's messages from its own goroutine. A
// client's OnNotification runs on the client's reader and must not wait for
// a response, so it calls Saw, which never blocks, and Run sends the
// acknowledgements. channel.ack is cumulative, so only the highest seq seen
// is sent; acknowledgements that pile up while one is in flight collapse
// into one.
type ChannelAcker struct {
	c    *Client
	id   string
	mu   sync.Mutex
	want uint64 // highest seq seen
	done uint64 // highest seq acknowledged
	wake chan struct{}
	// Acked, when set before Run, is told each acknowledged seq.
	Acked func(seq uint64)
}

// NewChannelAcker returns an acker with nothing bound yet; Bind it to the
// client and channel once the channel is registered. It is made before the
// client because the client's notification callback refers to it.
func NewChannelAcker() *ChannelAcker { return &ChannelAcker{wake: make(chan struct{}, 1)} }

// Bind sets the client and channel id the acknowledgements go to. Call it
// before Run.
func (a *ChannelAcker) Bind(c *Client, channelID string) {
	a.mu.Lock()
	a.c, a.id = c, channelID
	a.mu.Unlock()
}

// Saw records that seq was handled; it never blocks.
func (a *ChannelAcker) Saw(seq uint64) {
	a.mu.Lock()
	if seq > a.want {
		a.want = seq
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Run acknowledges until ctx ends or the client's connection does. A failed
// acknowledgement is dropped: the connection or the channel ended, and there
// is nothing left to acknowledge to.
func (a *ChannelAcker) Run(ctx context.Context) {
	a.mu.Lock()
	c, id := a.c, a.id
	a.mu.Unlock()
	for {
		select {
		case <-a.wake:
		case <-ctx.Done():
			return
		case <-c.Done():
			return
		}
		a.mu.Lock()
		want, done := a.want, a.done
		a.mu.Unlock()
		if want <= done {
			continue
		}
		if _, err := c.AckChannel(ctx, id, want); err != nil {
			continue
		}
		a.mu.Lock()
		a.done = want
		a.mu.Unlock()
		if a.Acked != nil {
			a.Acked(want)
		}
	}
}
