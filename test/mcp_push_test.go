package test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// TestMCPPushAndChannels: channels lists a channel bound to a session, and
// push delivers a message to its listener, named by the session or by the
// channel id; a string arrives as its JSON string, an object as itself.
func TestMCPPushAndChannels(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.startDaemon(nil)
	h.ctl(0, "spawn", "cc", "--", "sh")
	got := make(chan wire.ChannelMessage, 8)
	c, err := wire.Dial(context.Background(), h.socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
		var m wire.ChannelMessage
		if n.Method == wire.NotifyChannelMessage && json.Unmarshal(n.Params, &m) == nil {
			got <- m
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg, err := c.RegisterChannel(context.Background(), wire.RegisterChannelParams{Session: "cc", SessionToken: h.sessionToken("cc"), Description: "test listener"})
	if err != nil {
		t.Fatal(err)
	}
	m := h.startMCP(t, true)
	sc, _ := m.ok("channels", nil)
	if b := string(mustJSON(t, sc["channels"])); !strings.Contains(b, reg.ChannelID) || !strings.Contains(b, `"session":"cc"`) {
		t.Errorf("channels: %s, want %s bound to cc", b, reg.ChannelID)
	}
	receive := func(want string) {
		t.Helper()
		select {
		case msg := <-got:
			if string(msg.Message) != want || msg.ChannelID != reg.ChannelID {
				t.Errorf("the listener got %s on %s, want %s on %s", msg.Message, msg.ChannelID, want, reg.ChannelID)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the listener got nothing; want %s", want)
		}
	}
	sc, _ = m.ok("push", map[string]any{"session": "cc", "message": "hello there"})
	if sc["channel_id"] != reg.ChannelID || sc["routed"] != true {
		t.Errorf("push by session: %v", sc)
	}
	receive(`"hello there"`)
	m.ok("push", map[string]any{"channel_id": reg.ChannelID, "message": map[string]any{"n": 42}})
	receive(`{"n":42}`)
	m.badArgs("push", map[string]any{"session": "cc", "channel_id": reg.ChannelID, "message": "x"}, "one of them")
	m.refused("push", map[string]any{"session": "nobody", "message": "x"}, "channel_unknown", "nobody", "the channels tool")
}
