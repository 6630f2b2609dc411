package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

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
