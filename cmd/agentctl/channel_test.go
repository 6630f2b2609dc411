package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

func TestChannelMessageText(t *testing.T) {
	cases := []struct {
		arg    string
		asText bool
		want   string
	}{
		{`{"a": 1}`, false, `{"a":1}`},
		{`[1, 2]`, false, `[1,2]`},
		{`42`, false, `42`},
		{`42`, true, `"42"`},
		{`"quoted"`, false, `"quoted"`},
		{`plain text`, false, `"plain text"`},
		{`{"broken": `, false, `"{\"broken\": "`},
		{"", false, `""`},
		{"bad \xff utf-8", false, "\"bad \uFFFD utf-8\""},
		{"line\nbreak", false, `"line\nbreak"`},
	}
	for _, tc := range cases {
		got, err := channelMessageText(tc.arg, tc.asText)
		if err != nil || string(got) != tc.want || !json.Valid(got) {
			t.Errorf("channelMessageText(%q, %v) = %s, %v; want %s", tc.arg, tc.asText, got, err, tc.want)
		}
	}
}

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

func TestChannelUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"channel"},
		{"channel", "shout"},
		{"channel", "push"},
		{"channel", "push", "id"},
		{"channel", "push", "--session", "s"},
		{"channel", "push", "id", "msg", "extra"},
		{"channel", "list", "extra"},
		{"channel", "reply", "only-id"},
		{"channel", "listen", "extra"},
		{"channel", "listen", "--count", "-1"},
		{"channel", "mcp", "--session", ""},
	} {
		var out, errOut bytes.Buffer
		t.Setenv("AGENTD_SESSION", "")
		code := run(context.Background(), append([]string{"--socket", "/nonexistent/agentd.sock"}, args...), strings.NewReader(""), &out, &errOut)
		if code != wire.ExitUsage || !strings.HasPrefix(errOut.String(), "agentctl: ") || out.Len() != 0 {
			t.Errorf("agentctl %s: exit %d, stdout %q, stderr %q; want %d and one agentctl: line", strings.Join(args, " "), code, out.String(), errOut.String(), wire.ExitUsage)
		}
	}
}

func TestChannelUnreachable(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--socket", "/nonexistent/agentd.sock", "channel", "push", "c", "1"}, strings.NewReader(""), &out, &errOut)
	if code != wire.ExitUnreachable {
		t.Errorf("push with no daemon: exit %d (%s), want %d", code, errOut.String(), wire.ExitUnreachable)
	}
}
