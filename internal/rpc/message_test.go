package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
	"unicode"
)

// nested returns depth opening brackets, then depth closing ones (or none
// when unclosed).
func nested(open, close string, depth int, closed bool) string {
	s := strings.Repeat(open, depth)
	if closed {
		s += strings.Repeat(close, depth)
	}
	return s
}

// withinTime runs f and fails the test if it does not return in time: a
// decoder must not hang on hostile input.
func withinTime(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return within 30s", what)
	}
}

// checkMessageStyle checks that an error message is written for a person:
// lower case first letter, no trailing punctuation.
func checkMessageStyle(t *testing.T, input, msg string) {
	t.Helper()
	if msg == "" {
		t.Errorf("input %s: empty error message", shorten([]byte(input)))
		return
	}
	if r := []rune(msg)[0]; unicode.IsUpper(r) {
		t.Errorf("input %s: message %q starts with a capital, want lower case", shorten([]byte(input)), msg)
	}
	if strings.HasSuffix(msg, ".") {
		t.Errorf("input %s: message %q ends with a period", shorten([]byte(input)), msg)
	}
}

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	deepParamsOK := `{"id":3,"method":"agent.spawn","params":{"a":` + nested("[", "]", 500, true) + `}}`
	tests := []struct {
		name string
		body string
		// On success:
		want *Request
		// On failure:
		wantCode Code
		wantID   uint64   // the id returned with the error; 0 when unreadable
		wantMsg  []string // substrings the message must contain
		wantNot  []string // substrings the message must not contain
	}{
		// Valid requests.
		{name: "hello", body: `{"id":1,"method":"agent.hello","params":{"version":1}}`,
			want: &Request{ID: 1, Method: "agent.hello", Params: json.RawMessage(`{"version":1}`)}},
		{name: "params absent", body: `{"id":2,"method":"agent.list"}`,
			want: &Request{ID: 2, Method: "agent.list"}},
		{name: "params null", body: `{"id":2,"method":"agent.list","params":null}`,
			want: &Request{ID: 2, Method: "agent.list"}},
		{name: "params empty object", body: `{"id":2,"method":"agent.list","params":{}}`,
			want: &Request{ID: 2, Method: "agent.list", Params: json.RawMessage(`{}`)}},
		{name: "fields in another order", body: `{"params":{"name":"w1"},"method":"agent.stop","id":9}`,
			want: &Request{ID: 9, Method: "agent.stop", Params: json.RawMessage(`{"name":"w1"}`)}},
		{name: "whitespace everywhere", body: " \t\r\n{ \"id\" : 7 ,\n \"method\" : \"agent.list\" , \"params\" : { \"all\" : true } }\r\n ",
			want: &Request{ID: 7, Method: "agent.list", Params: json.RawMessage(`{ "all" : true }`)}},
		{name: "max id", body: `{"id":18446744073709551615,"method":"agent.list"}`,
			want: &Request{ID: 1<<64 - 1, Method: "agent.list"}},
		{name: "utf-8 params", body: `{"id":4,"method":"channel.send","params":{"text":"héllo ✓ 日本"}}`,
			want: &Request{ID: 4, Method: "channel.send", Params: json.RawMessage(`{"text":"héllo ✓ 日本"}`)}},
		{name: "deep but reasonable params", body: deepParamsOK,
			want: &Request{ID: 3, Method: "agent.spawn", Params: json.RawMessage(deepParamsOK[len(`{"id":3,"method":"agent.spawn","params":`) : len(deepParamsOK)-1])}},

		// Not a JSON object.
		{name: "empty body", body: ``, wantCode: CodeMalformedFrame, wantMsg: []string{"not a JSON object"}},
		{name: "only whitespace", body: " \n\t", wantCode: CodeMalformedFrame, wantMsg: []string{"not a JSON object"}},
		{name: "plain text", body: `hello daemon`, wantCode: CodeMalformedFrame, wantMsg: []string{"not a JSON object"}},
		{name: "array", body: `[{"id":1,"method":"agent.list"}]`, wantCode: CodeMalformedFrame, wantMsg: []string{"not a JSON object"}},
		{name: "string", body: `"agent.list"`, wantCode: CodeMalformedFrame, wantMsg: []string{"not a JSON object"}},
		{name: "number", body: `42`, wantCode: CodeMalformedFrame, wantMsg: []string{"not a JSON object"}},
		{name: "null", body: `null`, wantCode: CodeMalformedFrame, wantMsg: []string{"not a JSON object"}},
		{name: "broken object", body: `{"id":1,"method":}`, wantCode: CodeMalformedFrame, wantMsg: []string{"not valid JSON"}},
		{name: "unclosed object", body: `{"id":1,"method":"agent.list"`, wantCode: CodeMalformedFrame, wantMsg: []string{"not valid JSON"}},
		{name: "trailing garbage", body: `{"id":1,"method":"agent.list"} x`, wantCode: CodeMalformedFrame, wantMsg: []string{"not valid JSON"}},
		{name: "two objects", body: `{"id":1,"method":"agent.list"}{"id":2,"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"not valid JSON"}},
		{name: "invalid utf-8 in a string", body: "{\"id\":1,\"method\":\"agent.list\xff\"}", wantCode: CodeMalformedFrame, wantMsg: []string{"UTF-8"}},
		{name: "invalid utf-8 outside strings", body: "\xfe{\"id\":1,\"method\":\"agent.list\"}", wantCode: CodeMalformedFrame, wantMsg: []string{"UTF-8"}},
		{name: "overlong utf-8", body: "{\"id\":1,\"method\":\"\xc0\xaf\"}", wantCode: CodeMalformedFrame, wantMsg: []string{"UTF-8"}},
		{name: "surrogate half in utf-8", body: "{\"id\":1,\"method\":\"\xed\xa0\x80\"}", wantCode: CodeMalformedFrame, wantMsg: []string{"UTF-8"}},

		// The id.
		{name: "missing id", body: `{"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{`"id"`}},
		{name: "id string", body: `{"id":"7","method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{`"7"`, "integer"}},
		{name: "id negative", body: `{"id":-1,"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"-1", "integer"}},
		{name: "id fractional", body: `{"id":1.5,"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"1.5", "integer"}},
		{name: "id with zero fraction", body: `{"id":1.0,"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"1.0", "integer"}},
		{name: "id zero", body: `{"id":0,"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"id 0", "from 1"}},
		{name: "id exponent", body: `{"id":1e3,"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"1e3", "integer"}},
		{name: "id 2^64", body: `{"id":18446744073709551616,"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"18446744073709551616", "18446744073709551615"}},
		{name: "id huge", body: `{"id":` + strings.Repeat("9", 100) + `,"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"integer"}},
		{name: "id null", body: `{"id":null,"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"null"}},
		{name: "id bool", body: `{"id":true,"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"true"}},
		{name: "id object", body: `{"id":{"n":1},"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"integer"}},

		// The method: the id is readable, so it comes back.
		{name: "missing method", body: `{"id":7}`, wantCode: CodeMalformedFrame, wantID: 7, wantMsg: []string{"request 7", `"method"`}},
		{name: "method null", body: `{"id":7,"method":null}`, wantCode: CodeMalformedFrame, wantID: 7, wantMsg: []string{"request 7", `"method"`}},
		{name: "method number", body: `{"id":7,"method":42}`, wantCode: CodeMalformedFrame, wantID: 7, wantMsg: []string{"method"}, wantNot: []string{"not valid JSON"}},
		{name: "method array", body: `{"id":7,"method":["agent.list"]}`, wantCode: CodeMalformedFrame, wantID: 7, wantMsg: []string{"method"}, wantNot: []string{"not valid JSON"}},
		{name: "method object", body: `{"id":7,"method":{"name":"agent.list"}}`, wantCode: CodeMalformedFrame, wantID: 7, wantMsg: []string{"method"}, wantNot: []string{"not valid JSON"}},

		// The params: invalid_params, with the id.
		{name: "params array", body: `{"id":8,"method":"agent.spawn","params":["w1"]}`, wantCode: CodeInvalidParams, wantID: 8, wantMsg: []string{"agent.spawn", "object", "an array"}},
		{name: "params string", body: `{"id":8,"method":"agent.spawn","params":"w1"}`, wantCode: CodeInvalidParams, wantID: 8, wantMsg: []string{"agent.spawn", "object", "a string"}},
		{name: "params number", body: `{"id":8,"method":"agent.spawn","params":3}`, wantCode: CodeInvalidParams, wantID: 8, wantMsg: []string{"agent.spawn", "object", "a number"}},
		{name: "params negative number", body: `{"id":8,"method":"agent.spawn","params":-3}`, wantCode: CodeInvalidParams, wantID: 8, wantMsg: []string{"object", "a number"}},
		{name: "params bool", body: `{"id":8,"method":"agent.spawn","params":false}`, wantCode: CodeInvalidParams, wantID: 8, wantMsg: []string{"object", "a boolean"}},

		// Hostile nesting: an error, promptly, without a crash.
		{name: "100000 nested arrays", body: nested("[", "]", 100000, true), wantCode: CodeMalformedFrame, wantMsg: []string{"not a JSON object"}},
		{name: "100000 nested objects", body: nested(`{"a":`, "}", 100000, true), wantCode: CodeMalformedFrame, wantMsg: []string{"not valid JSON"}},
		{name: "100000 nested arrays in params", body: `{"id":5,"method":"agent.list","params":{"a":` + nested("[", "]", 100000, true) + `}}`, wantCode: CodeMalformedFrame, wantMsg: []string{"not valid JSON"}},
		{name: "100000 unclosed arrays in params", body: `{"id":5,"method":"agent.list","params":{"a":` + nested("[", "]", 100000, false), wantCode: CodeMalformedFrame, wantMsg: []string{"not valid JSON"}},
		{name: "100000 nested objects in id", body: `{"id":` + nested(`{"a":`, "}", 100000, true) + `,"method":"agent.list"}`, wantCode: CodeMalformedFrame, wantMsg: []string{"not valid JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := shorten([]byte(tt.body))
			var req *Request
			var err error
			withinTime(t, "DecodeRequest("+in+")", func() { req, err = DecodeRequest([]byte(tt.body)) })
			if tt.want != nil {
				if err != nil {
					t.Fatalf("DecodeRequest(%s): got error %v, want %+v", in, err, *tt.want)
				}
				if req.ID != tt.want.ID || req.Method != tt.want.Method || !bytes.Equal(req.Params, tt.want.Params) || (req.Params == nil) != (tt.want.Params == nil) {
					t.Errorf("DecodeRequest(%s):\ngot  %s\nwant %s", in, describe(*req), describe(*tt.want))
				}
				return
			}
			if err == nil {
				t.Fatalf("DecodeRequest(%s): got %s, want a %s error", in, describe(*req), tt.wantCode)
			}
			var werr *Error
			if !errors.As(err, &werr) {
				t.Fatalf("DecodeRequest(%s): got %T %v, want a *wire.Error", in, err, err)
			}
			if werr.Code != tt.wantCode {
				t.Errorf("DecodeRequest(%s): got code %s (%q), want %s", in, werr.Code, werr.Message, tt.wantCode)
			}
			// The engine's codes are never retryable (pkg/wire's table
			// agrees, checked there).
			if werr.Retryable {
				t.Errorf("DecodeRequest(%s): got retryable %v, want false", in, werr.Retryable)
			}
			var gotID uint64
			if req != nil {
				gotID = req.ID
			}
			if gotID != tt.wantID {
				t.Errorf("DecodeRequest(%s): got id %d returned with the error, want %d (the id, when it can be read, lets the error be answered to the right call)", in, gotID, tt.wantID)
			}
			for _, s := range tt.wantMsg {
				if !strings.Contains(werr.Message, s) {
					t.Errorf("DecodeRequest(%s): message %q does not name the problem: want it to contain %q", in, werr.Message, s)
				}
			}
			for _, s := range tt.wantNot {
				if strings.Contains(werr.Message, s) {
					t.Errorf("DecodeRequest(%s): message %q misnames the problem: want it not to contain %q", in, werr.Message, s)
				}
			}
			if len(werr.Message) > 500 {
				t.Errorf("DecodeRequest(%s): message is %d bytes, want a short message (it must not echo the input)", in, len(werr.Message))
			}
			checkMessageStyle(t, tt.body, werr.Message)
		})
	}
}

func TestDecodeIncoming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		want    Incoming // on success
		wantErr []string // on failure: substrings of the error text
	}{
		{name: "result object", body: `{"id":3,"result":{"a":1}}`,
			want: Incoming{Response: &Response{ID: 3, Result: json.RawMessage(`{"a":1}`)}}},
		{name: "result null", body: `{"id":3,"result":null}`,
			want: Incoming{Response: &Response{ID: 3, Result: json.RawMessage(`null`)}}},
		{name: "result null with spaces", body: `{ "id" : 3 , "result" : null }`,
			want: Incoming{Response: &Response{ID: 3, Result: json.RawMessage(`null`)}}},
		{name: "result false", body: `{"id":3,"result":false}`,
			want: Incoming{Response: &Response{ID: 3, Result: json.RawMessage(`false`)}}},
		{name: "result zero", body: `{"id":3,"result":0}`,
			want: Incoming{Response: &Response{ID: 3, Result: json.RawMessage(`0`)}}},
		{name: "result empty string", body: `{"id":3,"result":""}`,
			want: Incoming{Response: &Response{ID: 3, Result: json.RawMessage(`""`)}}},
		{name: "result with error null", body: `{"id":3,"result":1,"error":null}`,
			want: Incoming{Response: &Response{ID: 3, Result: json.RawMessage(`1`)}}},
		{name: "max id", body: `{"id":18446744073709551615,"result":{}}`,
			want: Incoming{Response: &Response{ID: 1<<64 - 1, Result: json.RawMessage(`{}`)}}},
		{name: "id 0 error", body: `{"id":0,"error":{"code":"malformed_frame","message":"frame length is zero"}}`,
			want: Incoming{Response: &Response{ID: 0, Error: &Error{Code: CodeMalformedFrame, Message: "frame length is zero"}}}},
		{name: "error with details", body: `{"id":4,"error":{"code":"busy","message":"queue full","retryable":true,"details":{"limit":8}}}`,
			want: Incoming{Response: &Response{ID: 4, Error: &Error{Code: CodeBusy, Message: "queue full", Retryable: true, Details: json.RawMessage(`{"limit":8}`)}}}},
		{name: "error code only", body: `{"id":4,"error":{"code":"busy"}}`,
			want: Incoming{Response: &Response{ID: 4, Error: &Error{Code: CodeBusy}}}},
		{name: "error with unknown code", body: `{"id":4,"error":{"code":"from_the_future","message":"new"}}`,
			want: Incoming{Response: &Response{ID: 4, Error: &Error{Code: "from_the_future", Message: "new"}}}},
		{name: "notification", body: `{"method":"channel.message","params":{"channel":"ci","text":"hi"}}`,
			want: Incoming{Notification: &Notification{Method: "channel.message", Params: json.RawMessage(`{"channel":"ci","text":"hi"}`)}}},
		{name: "notification without params", body: `{"method":"agent.exited"}`,
			want: Incoming{Notification: &Notification{Method: "agent.exited"}}},

		{name: "both result and error", body: `{"id":5,"result":{},"error":{"code":"internal","message":"x"}}`, wantErr: []string{"5", "both"}},
		{name: "both, result null", body: `{"id":5,"result":null,"error":{"code":"internal"}}`, wantErr: []string{"5", "both"}},
		{name: "neither result nor error", body: `{"id":5}`, wantErr: []string{"5", "neither"}},
		{name: "error null only", body: `{"id":5,"error":null}`, wantErr: []string{"5", "neither"}},
		{name: "error is a string", body: `{"id":5,"error":"boom"}`, wantErr: []string{"5", "error"}},
		{name: "error is a number", body: `{"id":5,"error":1}`, wantErr: []string{"5", "error"}},
		{name: "error without code", body: `{"id":5,"error":{"message":"boom"}}`, wantErr: []string{"5", "code"}},
		{name: "error with empty code", body: `{"id":5,"error":{"code":""}}`, wantErr: []string{"5", "code"}},
		{name: "neither id nor method", body: `{"result":1}`, wantErr: []string{"neither id nor method"}},
		{name: "empty object", body: `{}`, wantErr: []string{"neither id nor method"}},
		{name: "params only", body: `{"params":{}}`, wantErr: []string{"neither id nor method"}},
		{name: "id string", body: `{"id":"5","result":1}`, wantErr: []string{"decode"}},
		{name: "id negative", body: `{"id":-5,"result":1}`, wantErr: []string{"decode"}},
		{name: "id fractional", body: `{"id":5.5,"result":1}`, wantErr: []string{"decode"}},
		{name: "id 2^64", body: `{"id":18446744073709551616,"result":1}`, wantErr: []string{"decode"}},
		{name: "method number", body: `{"method":5}`, wantErr: []string{"decode"}},
		{name: "not json", body: `hello`, wantErr: []string{"decode"}},
		{name: "empty", body: ``, wantErr: []string{"decode"}},
		{name: "array", body: `[{"id":1,"result":1}]`, wantErr: []string{"decode"}},
		{name: "trailing garbage", body: `{"id":1,"result":1}]`, wantErr: []string{"decode"}},
		{name: "100000 nested arrays", body: nested("[", "]", 100000, true), wantErr: []string{"decode"}},
		{name: "100000 nested in result", body: `{"id":1,"result":` + nested(`{"a":`, "}", 100000, true) + `}`, wantErr: []string{"decode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := shorten([]byte(tt.body))
			var got Incoming
			var err error
			withinTime(t, "DecodeIncoming("+in+")", func() { got, err = DecodeIncoming([]byte(tt.body)) })
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("DecodeIncoming(%s): got %s, want an error", in, describeIncoming(got))
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("DecodeIncoming(%s): error %q does not name the problem: want it to contain %q", in, err, s)
					}
				}
				if got.Response != nil || got.Notification != nil {
					t.Errorf("DecodeIncoming(%s): got %s with the error, want an empty Incoming", in, describeIncoming(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeIncoming(%s): got error %v, want %s", in, err, describeIncoming(tt.want))
			}
			if !incomingEqual(got, tt.want) {
				t.Errorf("DecodeIncoming(%s):\ngot  %s\nwant %s", in, describeIncoming(got), describeIncoming(tt.want))
			}
		})
	}
}

func describeIncoming(in Incoming) string {
	switch {
	case in.Response != nil && in.Notification != nil:
		return "both " + describe(*in.Response) + " and " + describe(*in.Notification)
	case in.Response != nil:
		return describe(*in.Response)
	case in.Notification != nil:
		return describe(*in.Notification)
	}
	return "Incoming{}"
}

// rawEqual compares raw JSON exactly, including absent (nil) versus present.
func rawEqual(a, b json.RawMessage) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func incomingEqual(a, b Incoming) bool {
	if (a.Response == nil) != (b.Response == nil) || (a.Notification == nil) != (b.Notification == nil) {
		return false
	}
	if a.Notification != nil {
		if a.Notification.Method != b.Notification.Method || !rawEqual(a.Notification.Params, b.Notification.Params) {
			return false
		}
	}
	if a.Response != nil {
		ra, rb := a.Response, b.Response
		if ra.ID != rb.ID || !rawEqual(ra.Result, rb.Result) || (ra.Error == nil) != (rb.Error == nil) {
			return false
		}
		if ra.Error != nil {
			ea, eb := ra.Error, rb.Error
			if ea.Code != eb.Code || ea.Message != eb.Message || ea.Retryable != eb.Retryable || !rawEqual(ea.Details, eb.Details) {
				return false
			}
		}
	}
	return true
}

// TestAppendResponse checks the response encoder against DecodeIncoming,
// including the cases golden frames do not show.
func TestAppendResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		id     uint64
		result json.RawMessage
		err    *Error
		want   string
	}{
		{"nil result is null", 1, nil, nil, `{"id":1,"result":null}`},
		{"empty result is null", 1, json.RawMessage{}, nil, `{"id":1,"result":null}`},
		{"result as given", 2, json.RawMessage(`{"a": [1, 2]}`), nil, `{"id":2,"result":{"a": [1, 2]}}`},
		{"error wins over result", 3, json.RawMessage(`1`), &Error{Code: CodeBusy, Message: "full", Retryable: true}, `{"id":3,"error":{"code":"busy","message":"full","retryable":true}}`},
		{"id 0", 0, nil, Errorf(CodeMalformedFrame, "bad"), `{"id":0,"error":{"code":"malformed_frame","message":"bad","retryable":false}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := AppendResponse([]byte("x"), tt.id, tt.result, tt.err)
			if err != nil {
				t.Fatalf("AppendResponse(%d, %q, %v): %v", tt.id, tt.result, tt.err, err)
			}
			if string(got) != "x"+tt.want {
				t.Errorf("AppendResponse(%d, %q, %v):\ngot  %s\nwant %s", tt.id, tt.result, tt.err, got, "x"+tt.want)
			}
			if _, err := DecodeIncoming(got[1:]); err != nil {
				t.Errorf("DecodeIncoming(AppendResponse(...) = %s): %v", got[1:], err)
			}
		})
	}
	// Details that are not JSON cannot be encoded: an error, not a broken frame.
	bad := &Error{Code: CodeInternal, Details: json.RawMessage(`{not json`)}
	if got, err := AppendResponse(nil, 1, nil, bad); err == nil {
		t.Errorf("AppendResponse with details %q: got %s, nil; want an error", bad.Details, got)
	}
}

// TestAppendNotificationIsEncodingJSONs: a notification appended by hand,
// with params json.Marshal made (what Notify gives it), is byte for byte
// what encoding/json writes for it.
func TestAppendNotificationIsEncodingJSONs(t *testing.T) {
	for _, c := range []struct {
		method string
		params any
	}{
		{"agent.log_event", map[string]any{"name": "w", "seq": 3, "data": "y\r\n<&>\u2028"}},
		{"channel.message", []any{1, "<&>", nil}},
		{"x", nil},
		{"odd \"method\" <&> \u2028", "s"},
	} {
		p, err := marshalResult(c.params)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(Notification{Method: c.method, Params: p})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendNotification(nil, c.method, p); !bytes.Equal(got, want) {
			t.Errorf("%s: appended %s, encoding/json writes %s", c.method, got, want)
		}
	}
}

// TestNotifyRefusesInvalidRawParams: params given as raw JSON are copied
// into the frame as they are, so Notify checks them first.
func TestNotifyRefusesInvalidRawParams(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := NewClient(a, ClientOptions{})
	defer c.Close()
	if err := c.Notify("x.y", json.RawMessage(`{"a":`)); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("Notify with broken raw params: %v, want refused", err)
	}
}
