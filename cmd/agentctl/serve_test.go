package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/pkg/wire"
)

func TestParseServeLine(t *testing.T) {
	cases := []struct {
		line   string
		id     string // the id the answer carries, "" for none
		code   wire.Code
		method string
		follow bool
	}{
		{`{"id": 1, "method": "agent.list", "params": {}}`, "1", "", "agent.list", false},
		{`{"method": "agent.list"}`, "", "", "agent.list", false},
		{`{"id": "a-b", "method": "agent.hello"}`, `"a-b"`, "", "agent.hello", false},
		{`{"id": {"k": [1]}, "method": "agent.hello", "params": null}`, `{"k": [1]}`, "", "agent.hello", false},
		{`{"id": 2, "method": "agent.logs", "params": {"name": "x", "follow": true}}`, "2", "", "agent.logs", true},
		{`not json`, "", wire.CodeMalformedFrame, "", false},
		{`{"id": 3, "method": "agent.li`, "3", wire.CodeMalformedFrame, "", false},
		{`[1, 2]`, "", wire.CodeMalformedFrame, "", false},
		{`"text"`, "", wire.CodeMalformedFrame, "", false},
		{`{"id": 4}`, "4", wire.CodeMalformedFrame, "", false},
		{`{"id": 5, "method": ""}`, "5", wire.CodeMalformedFrame, "", false},
		{`{"id": 6, "method": ["x"]}`, "6", wire.CodeMalformedFrame, "", false},
		{`{"id": 7, "method": "agent.list", "params": "x"}`, "7", wire.CodeInvalidParams, "", false},
		{`{"id": 8, "method": "agent.list", "jsonrpc": "2.0"}`, "8", wire.CodeMalformedFrame, "", false},
		{`{"id": 9, "method": "agent.attach", "params": {"name": "s"}}`, "9", wire.CodeInvalidParams, "", false},
		{"{\"id\": 10, \"method\": \"\xff\"}", "", wire.CodeMalformedFrame, "", false},
	}
	for _, tc := range cases {
		req, id, bad := parseServeLine(1, inLine{text: []byte(tc.line)})
		if string(id) != tc.id {
			t.Errorf("%s: id %s, want %s", tc.line, id, tc.id)
		}
		if tc.code != "" {
			if bad == nil || bad.Code != tc.code || !strings.Contains(bad.Message, "line 1") && tc.code == wire.CodeMalformedFrame {
				t.Errorf("%s: error %+v, want %s naming line 1", tc.line, bad, tc.code)
			}
			continue
		}
		if bad != nil || req.method != tc.method || req.follow != tc.follow {
			t.Errorf("%s: %+v %v, want method %s follow %v", tc.line, req, bad, tc.method, tc.follow)
		}
	}
}

func TestReadServeLineSkipsWhatIsTooLong(t *testing.T) {
	long := `{"id": "big", "text": "` + strings.Repeat("a", maxServeLine) + "\"}\n"
	r := bufio.NewReaderSize(strings.NewReader("{\"id\": 1}\n"+long+"last"), 64<<10)
	line, over, err := readServeLine(r)
	if string(line) != "{\"id\": 1}\n" || over != nil || err != nil {
		t.Fatalf("first line %q %v %v", line, over, err)
	}
	line, over, err = readServeLine(r)
	if line != nil || over == nil || over.size != int64(len(long)) || len(over.prefix) != idPeek || err != nil {
		t.Fatalf("long line: %d bytes kept, %+v, %v; want none kept, its size and a %d-byte prefix", len(line), over != nil, err, idPeek)
	}
	if id := peekID(over.prefix); !bytes.Equal(id, []byte(`"big"`)) {
		t.Errorf("peekID of the long line's start = %s, want \"big\"", id)
	}
	line, over, err = readServeLine(r)
	if string(line) != "last" || over != nil || err == nil {
		t.Errorf("last line without a newline: %q %v %v, want it with EOF", line, over, err)
	}
}

func TestServeErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code wire.Code
	}{
		{wire.Errorf(wire.CodeBusy, "x"), wire.CodeBusy},
		{&wire.UnreachableError{Socket: "s"}, "unreachable"},
		{wire.ErrClosed, "unreachable"},
	} {
		if got := serveError(tc.err); got.Code != tc.code {
			b, _ := json.Marshal(got)
			t.Errorf("serveError(%v) = %s, want code %s", tc.err, b, tc.code)
		}
	}
}
