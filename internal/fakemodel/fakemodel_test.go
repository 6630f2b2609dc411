package fakemodel

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/testhome"
)

func TestMain(m *testing.M) { os.Exit(testhome.Main(m)) }

// script is a conversation of one text turn and one tool turn.
var script = Script{Turns: []Turn{
	{Prompt: "say-hello", Steps: []Step{Text("Hello from the fake model, streamed in several deltas.")}},
	{Prompt: "make-file", Steps: []Step{Call("Bash", map[string]any{"command": "touch approved.txt"}), Text("The file exists.")}},
	{Prompt: "patch-file", Steps: []Step{Call("apply_patch", map[string]any{"input": "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"})}},
	{Prompt: "fail-401", Steps: []Step{Fail(401)}},
	{Prompt: "fail-429", Steps: []Step{Fail(429)}},
	{Prompt: "fail-500", Steps: []Step{Fail(500)}},
}}

// event is one server-sent event.
type event struct {
	name string
	data map[string]any
}

// post sends body to path on a fresh server and returns the response's
// events (or its JSON as one event named "json") and the server.
func post(t *testing.T, path, body string) ([]event, *Server) {
	t.Helper()
	s := New(script)
	srv := httptest.NewServer(s)
	defer srv.Close()
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatalf("POST %s: status %d, body not JSON: %v", path, resp.StatusCode, err)
		}
		v["status"] = float64(resp.StatusCode)
		return []event{{name: "json", data: v}}, s
	}
	var evs []event
	var name string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var v map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v); err != nil {
				t.Fatalf("event %q: data not JSON: %v: %s", name, err, line)
			}
			evs = append(evs, event{name: name, data: v})
			name = ""
		}
	}
	return evs, s
}

func names(evs []event) string {
	var n []string
	for _, e := range evs {
		n = append(n, e.name)
	}
	return strings.Join(n, " ")
}

func TestAnthropicStreamsTextBlock(t *testing.T) {
	t.Parallel()
	evs, s := post(t, "/v1/messages?beta=true", `{"model":"m","stream":true,"tools":[{"name":"Bash"}],
		"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"please say-hello"}]}]}`)
	want := "message_start content_block_start content_block_delta content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := names(evs); got != want {
		t.Fatalf("events: got %s, want %s", got, want)
	}
	var text string
	for _, e := range evs {
		if d, ok := e.data["delta"].(map[string]any); ok && d["type"] == "text_delta" {
			text += d["text"].(string)
		}
	}
	if text != script.Turns[0].Steps[0].Text {
		t.Errorf("streamed text: got %q, want %q", text, script.Turns[0].Steps[0].Text)
	}
	if stop := evs[len(evs)-2].data["delta"].(map[string]any)["stop_reason"]; stop != "end_turn" {
		t.Errorf("stop_reason: got %v, want end_turn", stop)
	}
	r := s.Requests()
	if len(r) != 1 || r[0].API != Anthropic || r[0].Turn != 0 || r[0].Step != 0 || !r[0].HasTools {
		t.Errorf("recorded: got %v, want one anthropic request of turn 0 step 0 with tools", r)
	}
}

func TestAnthropicToolCallThenTextAfterTheResult(t *testing.T) {
	t.Parallel()
	first := `{"stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"make-file now"}]}`
	evs, s1 := post(t, "/v1/messages", first)
	var start map[string]any
	var input string
	for _, e := range evs {
		if cb, ok := e.data["content_block"].(map[string]any); ok {
			start = cb
		}
		if d, ok := e.data["delta"].(map[string]any); ok && d["type"] == "input_json_delta" {
			input += d["partial_json"].(string)
		}
	}
	if start["type"] != "tool_use" || start["name"] != "Bash" || !strings.HasPrefix(start["id"].(string), "toolu_") {
		t.Fatalf("content block: got %v, want a tool_use of Bash", start)
	}
	if input != `{"command":"touch approved.txt"}` {
		t.Errorf("tool input: got %s", input)
	}
	if stop := evs[len(evs)-2].data["delta"].(map[string]any)["stop_reason"]; stop != "tool_use" {
		t.Errorf("stop_reason: got %v, want tool_use", stop)
	}
	if r := s1.Requests()[0]; r.CallID != start["id"] {
		t.Errorf("recorded call id: got %q, want the tool_use's %v", r.CallID, start["id"])
	}

	second := `{"stream":false,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"make-file now"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"text","text":"<system-reminder>r</system-reminder>"}]}]}`
	evs, s := post(t, "/v1/messages", second)
	content := evs[0].data["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["text"] != "The file exists." || evs[0].data["stop_reason"] != "end_turn" {
		t.Fatalf("answer to the tool result: got %v, want the final text", evs[0].data)
	}
	if r := s.Requests()[0]; r.ToolResults != 1 || r.Step != 1 {
		t.Errorf("recorded: got results=%d step=%d, want 1 and 1", r.ToolResults, r.Step)
	}
}

func TestSideRequestWithoutToolsNeverGetsAToolCall(t *testing.T) {
	t.Parallel()
	evs, s := post(t, "/v1/messages", `{"messages":[{"role":"user","content":"title for: make-file now"}]}`)
	content := evs[0].data["content"].([]any)
	if len(content) != 0 || evs[0].data["stop_reason"] != "end_turn" {
		t.Fatalf("a request without tools in a tool step: got %v, want no tool_use", evs[0].data)
	}
	if r := s.Requests()[0]; r.HasTools {
		t.Errorf("recorded HasTools for a request without tools")
	}
}

func TestUnscriptedPromptGetsFallbackNamingIt(t *testing.T) {
	t.Parallel()
	evs, _ := post(t, "/v1/messages", `{"tools":[{}],"messages":[{"role":"user","content":"what is this"}]}`)
	text := evs[0].data["content"].([]any)[0].(map[string]any)["text"].(string)
	if !strings.Contains(text, `no scripted reply for "what is this"`) {
		t.Fatalf("fallback: got %q", text)
	}
}

func TestOpenAIResponsesFunctionCall(t *testing.T) {
	t.Parallel()
	body := `{"model":"gpt-fake","stream":true,"tools":[{"type":"function","name":"Bash"}],"input":[
		{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context/>"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"make-file"}]}]}`
	evs, s := post(t, "/v1/responses", body)
	want := "response.created response.in_progress response.output_item.added response.function_call_arguments.delta response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done response.completed"
	if got := names(evs); got != want {
		t.Fatalf("events: got %s, want %s", got, want)
	}
	item := evs[len(evs)-2].data["item"].(map[string]any)
	if item["type"] != "function_call" || item["name"] != "Bash" || item["arguments"] != `{"command":"touch approved.txt"}` || item["call_id"] == "" {
		t.Errorf("function call item: got %v", item)
	}
	for i, e := range evs {
		if e.data["type"] != e.name || e.data["sequence_number"] != float64(i) {
			t.Errorf("event %d: type %v, sequence %v; want %s, %d", i, e.data["type"], e.data["sequence_number"], e.name, i)
		}
	}
	if r := s.Requests()[0]; r.API != OpenAI || r.Turn != 1 || r.Prompt != "make-file" {
		t.Errorf("recorded: got %v", r)
	}
}

// TestOpenAIResponsesCustomToolCall: a tool declared "custom" (Codex's
// apply_patch) is called with its free-form input streamed in deltas, not
// with JSON arguments.
func TestOpenAIResponsesCustomToolCall(t *testing.T) {
	t.Parallel()
	body := `{"stream":true,"tools":[{"type":"custom","name":"apply_patch"}],"input":[
		{"type":"message","role":"user","content":[{"type":"input_text","text":"patch-file"}]}]}`
	evs, _ := post(t, "/v1/responses", body)
	want := "response.created response.in_progress response.output_item.added response.custom_tool_call_input.delta response.custom_tool_call_input.delta response.custom_tool_call_input.delta response.custom_tool_call_input.delta response.custom_tool_call_input.done response.output_item.done response.completed"
	if got := names(evs); got != want {
		t.Fatalf("events: got %s, want %s", got, want)
	}
	patch := "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n"
	var streamed string
	for _, e := range evs {
		if e.name == "response.custom_tool_call_input.delta" {
			streamed += e.data["delta"].(string)
		}
	}
	added := evs[2].data["item"].(map[string]any)
	done := evs[len(evs)-3].data
	item := evs[len(evs)-2].data["item"].(map[string]any)
	if streamed != patch || done["input"] != patch || added["input"] != "" || added["status"] != "in_progress" {
		t.Errorf("streamed %q, done %v, added %v; want the patch in deltas and an empty in-progress item first", streamed, done, added)
	}
	if item["type"] != "custom_tool_call" || item["name"] != "apply_patch" || item["input"] != patch || item["arguments"] != nil {
		t.Errorf("custom tool call item: got %v", item)
	}
}

func TestOpenAIResponsesTextAfterFunctionOutput(t *testing.T) {
	t.Parallel()
	body := `{"stream":true,"tools":[{"type":"function","name":"Bash"}],"input":[
		{"type":"message","role":"user","content":[{"type":"input_text","text":"make-file"}]},
		{"type":"function_call","call_id":"c1","name":"Bash","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"done"}]}`
	evs, _ := post(t, "/v1/responses", body)
	var text string
	for _, e := range evs {
		if e.name == "response.output_text.delta" {
			text += e.data["delta"].(string)
		}
	}
	if text != "The file exists." {
		t.Fatalf("text after the tool output: got %q", text)
	}
	done := evs[len(evs)-1].data["response"].(map[string]any)
	if done["status"] != "completed" || done["usage"] == nil || len(done["output"].([]any)) != 1 {
		t.Errorf("response.completed: got %v", done)
	}
}

func TestGeminiStreamsFunctionCall(t *testing.T) {
	t.Parallel()
	body := `{"contents":[{"role":"user","parts":[{"text":"make-file"}]}],"tools":[{"functionDeclarations":[{"name":"Bash"}]}]}`
	evs, _ := post(t, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", body)
	if len(evs) != 1 {
		t.Fatalf("chunks: got %d, want 1", len(evs))
	}
	cand := evs[0].data["candidates"].([]any)[0].(map[string]any)
	part := cand["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)
	call := part["functionCall"].(map[string]any)
	if call["name"] != "Bash" || call["args"].(map[string]any)["command"] != "touch approved.txt" || cand["finishReason"] != "STOP" {
		t.Fatalf("function call chunk: got %v", evs[0].data)
	}

	body = `{"contents":[{"role":"user","parts":[{"text":"make-file"}]},{"role":"model","parts":[{"functionCall":{"name":"Bash","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"name":"Bash","response":{"output":""}}}]}],"tools":[{}]}`
	evs, _ = post(t, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", body)
	var text string
	for _, e := range evs {
		for _, p := range e.data["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any) {
			text += p.(map[string]any)["text"].(string)
		}
	}
	if text != "The file exists." || evs[len(evs)-1].data["usageMetadata"] == nil {
		t.Fatalf("text after the function response: got %q (%d chunks)", text, len(evs))
	}
}

func TestGeminiJSONRequestAnsweredFromItsSchema(t *testing.T) {
	t.Parallel()
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"responseMimeType":"application/json",
		"responseJsonSchema":{"type":"OBJECT","properties":{"reasoning":{"type":"STRING"},"next_speaker":{"type":"STRING","enum":["model","user"]},
		"score":{"type":"INTEGER"},"model_choice":{"type":"string","enum":["flash","pro"]}}}}}`
	evs, _ := post(t, "/v1beta/models/gemini-lite:generateContent", body)
	text := evs[0].data["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"].(string)
	var got map[string]any
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("JSON answer %q: %v", text, err)
	}
	if got["next_speaker"] != "user" || got["model_choice"] != "flash" || got["score"] != float64(0) || got["reasoning"] != "" {
		t.Fatalf("JSON answer: got %v", got)
	}
}

func TestUnknownRequestsAnsweredAndRecorded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, path string
		status       int
		field        string
	}{
		{"GET", "/v1/models", 200, "data"},
		{"POST", "/v1/messages/count_tokens", 200, "input_tokens"},
		{"POST", "/v1beta/models/g:countTokens", 200, "totalTokens"},
		{"GET", "/api/hello", 404, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			s := New(Script{})
			srv := httptest.NewServer(s)
			defer srv.Close()
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(`{}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var v map[string]any
			json.NewDecoder(resp.Body).Decode(&v)
			if resp.StatusCode != tt.status || v[tt.field] == nil {
				t.Errorf("got %d %v, want %d with %s", resp.StatusCode, v, tt.status, tt.field)
			}
			if r := s.Requests(); len(r) != 1 || r[0].Path != tt.path || r[0].Status != tt.status {
				t.Errorf("recorded: got %v", r)
			}
		})
	}
}

func TestBadBodyIsRefusedWithTheReason(t *testing.T) {
	t.Parallel()
	evs, _ := post(t, "/v1/messages", `{"messages": [`)
	if evs[0].data["status"] != float64(400) || !strings.Contains(evs[0].data["error"].(map[string]any)["message"].(string), "unexpected end") {
		t.Fatalf("a truncated body: got %v", evs[0].data)
	}
}

// TestScriptedFailureAnsweredInEachAPIsErrorShape: a Fail step answers
// with its status and the error body the CLI of that API reads (the error
// type or status word that says a bad key, a limit or an outage).
func TestScriptedFailureAnsweredInEachAPIsErrorShape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, body string
		status     int
		field      func(map[string]any) any
		want       string
	}{
		{"/v1/messages", `{"stream":true,"tools":[{}],"messages":[{"role":"user","content":"fail-401"}]}`, 401,
			func(v map[string]any) any { return v["error"].(map[string]any)["type"] }, "authentication_error"},
		{"/v1/messages", `{"stream":true,"tools":[{}],"messages":[{"role":"user","content":"fail-429"}]}`, 429,
			func(v map[string]any) any { return v["error"].(map[string]any)["type"] }, "rate_limit_error"},
		{"/v1/responses", `{"stream":true,"tools":[{}],"input":[{"role":"user","content":[{"type":"input_text","text":"fail-429"}]}]}`, 429,
			func(v map[string]any) any { return v["error"].(map[string]any)["code"] }, "rate_limit_exceeded"},
		{"/v1/responses", `{"stream":true,"tools":[{}],"input":[{"role":"user","content":[{"type":"input_text","text":"fail-500"}]}]}`, 500,
			func(v map[string]any) any { return v["error"].(map[string]any)["code"] }, "server_error"},
		{"/v1beta/models/g:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"fail-401"}]}],"tools":[{}]}`, 401,
			func(v map[string]any) any { return v["error"].(map[string]any)["status"] }, "UNAUTHENTICATED"},
		{"/v1beta/models/g:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"fail-429"}]}],"tools":[{}]}`, 429,
			func(v map[string]any) any { return v["error"].(map[string]any)["status"] }, "RESOURCE_EXHAUSTED"},
	} {
		evs, s := post(t, tc.path, tc.body)
		if len(evs) != 1 || evs[0].name != "json" {
			t.Errorf("POST %s %s: got events %s, want one JSON error body", tc.path, tc.body, names(evs))
			continue
		}
		v := evs[0].data
		if v["status"] != float64(tc.status) {
			t.Errorf("POST %s %s: status got %v, want %d", tc.path, tc.body, v["status"], tc.status)
		}
		if got := tc.field(v); got != tc.want {
			t.Errorf("POST %s %s: error kind got %v, want %s (body %v)", tc.path, tc.body, got, tc.want, v)
		}
		if r := s.Requests(); len(r) != 1 || r[0].Status != tc.status {
			t.Errorf("POST %s: recorded %v, want one request answered %d", tc.path, r, tc.status)
		}
	}
}

// TestLeadHoldsTheReplyBack: a step's Lead delays the whole reply, its
// headers included, so the CLI sees nothing until then.
func TestLeadHoldsTheReplyBack(t *testing.T) {
	t.Parallel()
	s := New(Script{Turns: []Turn{{Prompt: "think", Steps: []Step{{Text: "Done.", Lead: 300 * time.Millisecond}}}}})
	srv := httptest.NewServer(s)
	defer srv.Close()
	start := time.Now()
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json",
		strings.NewReader(`{"stream":true,"tools":[{}],"messages":[{"role":"user","content":"think"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := time.Since(start); got < 300*time.Millisecond {
		t.Errorf("headers after %s, want at least the 300ms lead", got)
	}
}
