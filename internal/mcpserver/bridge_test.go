package mcpserver

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

func TestChannelEventShape(t *testing.T) {
	sent := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	from := wire.ChannelPeer{PID: 7, UID: 1000, Exe: "/usr/bin/x"}
	cases := []struct {
		name    string
		message string
		content string
		meta    map[string]string
	}{
		{"string", `"hello"`, "hello", nil},
		{"object", `{"a":1}`, `{"a":1}`, nil},
		{"ask", `{"kind":"ask","ask_id":"ask-1","text":"why?"}`, "why?", map[string]string{"kind": "ask", "ask_id": "ask-1"}},
		{"not an ask", `{"kind":"other","ask_id":"x"}`, `{"kind":"other","ask_id":"x"}`, nil},
	}
	for _, tc := range cases {
		ev := channelEvent(wire.ChannelMessage{ChannelID: "c.1", Seq: 3, From: from, Message: json.RawMessage(tc.message), SentAt: sent})
		want := map[string]string{"channel_id": "c.1", "seq": "3", "from_pid": "7", "from_uid": "1000", "from_exe": "/usr/bin/x", "sent_at": "2026-01-02T03:04:05Z"}
		for k, v := range tc.meta {
			want[k] = v
		}
		if ev.Content != tc.content || len(ev.Meta) != len(want) {
			t.Errorf("%s: event %+v, want content %q and meta %v", tc.name, ev, tc.content, want)
		}
		for k, v := range want {
			if ev.Meta[k] != v {
				t.Errorf("%s: meta[%s] = %q, want %q", tc.name, k, ev.Meta[k], v)
			}
		}
	}
}

func TestSanitizeMeta(t *testing.T) {
	got := sanitizeMeta(map[string]string{"ok_1": "a", "has-dash": "b", "dot.ted": "c", "": "d"})
	want := map[string]string{"ok_1": "a", "has_dash": "b", "dot_ted": "c"}
	if len(got) != len(want) {
		t.Fatalf("sanitizeMeta = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("sanitizeMeta[%q] = %q, want %q", k, got[k], v)
		}
	}
}
