// Package fakemodel is a scripted model server for tests that run the real
// agent CLIs (Claude Code, Codex, Gemini CLI) offline. It speaks just enough
// of three streaming APIs to play a conversation the test writes:
//
//   - Anthropic Messages (POST /v1/messages, SSE when stream is true), which
//     Claude Code calls at ANTHROPIC_BASE_URL;
//   - OpenAI Responses (POST /v1/responses, SSE), which Codex calls through a
//     model provider whose base_url points here;
//   - Gemini (POST /v1beta/models/M:streamGenerateContent?alt=sse, and the
//     non-streaming :generateContent and :countTokens), which Gemini CLI
//     calls at GOOGLE_GEMINI_BASE_URL.
//
// A Script is a list of Turns. A Turn is chosen by the person's prompt (the
// latest user message containing Turn.Prompt) and plays its Steps in order:
// step i answers the request that carries i tool results after that prompt.
// The choice is made from the request alone, not from a counter, so the
// CLIs' retries and their side requests (titles, quota checks, routing
// classifiers, which carry no tools) never shift the script.
//
// Every request is recorded (Requests), so a test can assert that a tool's
// result came back and that earlier turns were resent. Requests the server
// does not know are answered sensibly (an empty model list, a token count,
// 404 for the rest) and recorded as well, so a new CLI release's calls show
// up in a test's log rather than hang it.
//
// It imports nothing from agentd and knows nothing of terminals: it serves
// HTTP on any listener, which for the CLI tests is a loopback socket in a
// network namespace of the test's own (internal/netnstest).
package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Script is what the fake model answers, turn by turn.
type Script struct {
	Turns []Turn
	// Fallback answers a prompt no Turn matches; empty means a text that
	// says no reply was scripted, naming the prompt.
	Fallback string
}

// Turn is the model's part of one exchange started by a person's prompt.
type Turn struct {
	// Prompt selects the turn: the latest user message whose text
	// contains it (case-sensitive) starts this turn.
	Prompt string
	// Steps are the model's replies within the turn: Steps[0] answers the
	// prompt, Steps[i] the i-th tool result. A request past the last step
	// gets the last step's text again.
	Steps []Step
}

// Step is one model reply: a text, a tool call, or a text then a tool call.
type Step struct {
	Text string
	Tool *ToolCall
	// Delay holds the reply's stream open this long before its end, so
	// a test can see the CLI working.
	Delay time.Duration
	// Lead holds the reply back this long before its first byte: the
	// model thinking, when a CLI shows its working state (Codex hides
	// its status row once text streams).
	Lead time.Duration
	// Status, when not zero, answers the request with this HTTP status
	// and an error body in the API's own shape instead of a reply (401
	// a bad key, 429 a usage limit, 500 an outage), so a test can see
	// how the CLI shows a failed turn. Text and Tool are ignored.
	Status int
}

// ToolCall is a call of one of the CLI's tools, by the name the CLI
// declared it under (Claude Code's "Bash", Codex's "exec_command", Gemini's
// "run_shell_command") with its JSON arguments.
type ToolCall struct {
	Name  string
	Input map[string]any
}

// Fail is a Step that answers with the HTTP status code and the API's
// error body.
func Fail(code int) Step { return Step{Status: code} }

// Text is a Step that answers with text.
func Text(s string) Step { return Step{Text: s} }

// Call is a Step that calls a tool.
func Call(name string, input map[string]any) Step {
	return Step{Tool: &ToolCall{Name: name, Input: input}}
}

// API names the protocol a request was understood as.
type API string

// The APIs the server speaks; Unknown is any other request.
const (
	Anthropic API = "anthropic"
	OpenAI    API = "openai"
	Gemini    API = "gemini"
	Unknown   API = "unknown"
)

// Request is one recorded HTTP request and how it was answered.
type Request struct {
	Time   time.Time
	API    API
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	// Prompt is the latest user text the request carries ("" if none).
	Prompt string
	// ToolResults is the number of tool results after the turn's prompt.
	ToolResults int
	// HasTools says whether the request declared tools: the CLIs' main
	// agent requests do, their side requests (titles, classifiers) do not.
	HasTools bool
	// Turn is the index of the scripted turn answered, -1 for none.
	Turn int
	// Step is the index of the step played, -1 for none.
	Step int
	// CallID is the id the reply gave its tool call ("" without one): the
	// CLI sends it back with the tool's result.
	CallID string
	// Status is the HTTP status answered.
	Status int
}

// String is a one-line summary for test logs.
func (r Request) String() string {
	p := r.Prompt
	if len(p) > 60 {
		p = p[:60] + "…"
	}
	q := ""
	if r.Query != "" {
		q = "?" + r.Query
	}
	return fmt.Sprintf("%s %s%s api=%s tools=%v results=%d turn=%d step=%d status=%d prompt=%q",
		r.Method, r.Path, q, r.API, r.HasTools, r.ToolResults, r.Turn, r.Step, r.Status, p)
}

// Server is the fake model. Its zero value is not usable: call New.
type Server struct {
	script Script

	mu       sync.Mutex // guards requests and ids
	requests []Request
	ids      int
}

// New returns a server that plays script.
func New(script Script) *Server { return &Server{script: script} }

// Requests returns a copy of every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Serve answers HTTP on l until l is closed; it returns the listener's
// error (http.ErrServerClosed never, as there is no Shutdown).
func (s *Server) Serve(l net.Listener) error {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(l)
}

// maxBody bounds a request body; the CLIs' largest (Claude Code's tool
// list and system prompt) are a few hundred KiB.
const maxBody = 32 << 20

// ServeHTTP routes one request by its path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	rec := Request{Time: time.Now(), API: Unknown, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, Turn: -1, Step: -1}
	rec.Status = s.route(w, r, body, &rec)
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
}

// route answers the request and fills in what rec learns from it; it
// returns the status written.
func (s *Server) route(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		rec.API = Anthropic
		return writeJSON(w, http.StatusOK, map[string]any{"input_tokens": len(body) / 4})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		rec.API = Anthropic
		return s.anthropic(w, r, body, rec)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		rec.API = OpenAI
		return s.openai(w, r, body, rec)
	case r.Method == http.MethodPost && strings.Contains(path, "/models/") && strings.Contains(path, ":"):
		rec.API = Gemini
		_, method, _ := strings.Cut(path[strings.LastIndex(path, "/"):], ":")
		switch method {
		case "streamGenerateContent":
			return s.gemini(w, r, body, rec, true)
		case "generateContent":
			return s.gemini(w, r, body, rec, false)
		case "countTokens":
			return writeJSON(w, http.StatusOK, map[string]any{"totalTokens": len(body) / 4})
		}
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		// Anthropic's and OpenAI's model lists share a path; an empty
		// list in both shapes makes every CLI keep the model it was given.
		return writeJSON(w, http.StatusOK, map[string]any{"data": []any{}, "models": []any{}, "object": "list", "has_more": false})
	}
	return writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
		"type": "not_found_error", "message": "fakemodel does not serve " + r.Method + " " + path}})
}

// choose picks the turn and step that answer a conversation whose user
// texts (in order, with the number of tool results after each) are given.
func (s *Server) choose(prompts []userText, hasTools bool, rec *Request) (Step, bool) {
	if len(prompts) == 0 {
		return Step{}, false
	}
	last := prompts[len(prompts)-1]
	rec.Prompt = last.text
	rec.HasTools = hasTools
	// The latest prompt that names a turn; injected context (Codex's
	// environment, Claude Code's reminders) names none and is skipped.
	for i := len(prompts) - 1; i >= 0; i-- {
		for ti, t := range s.script.Turns {
			if t.Prompt == "" || !strings.Contains(prompts[i].text, t.Prompt) || len(t.Steps) == 0 {
				continue
			}
			results := 0
			for _, p := range prompts[i:] {
				results += p.resultsAfter
			}
			rec.Prompt, rec.ToolResults, rec.Turn = prompts[i].text, results, ti
			step := min(results, len(t.Steps)-1)
			rec.Step = step
			st := t.Steps[step]
			if results >= len(t.Steps) {
				st = Step{Text: t.Steps[len(t.Steps)-1].Text} // never call a tool twice
			}
			if !hasTools {
				st.Tool = nil
			}
			return st, true
		}
	}
	return Step{}, false
}

// reply is the step that answers a conversation: the one choose picks, or
// the fallback when no turn matches.
func (s *Server) reply(prompts []userText, hasTools bool, rec *Request) Step {
	if st, ok := s.choose(prompts, hasTools, rec); ok {
		return st
	}
	rec.HasTools = hasTools
	return s.fallback(rec.Prompt)
}

// fallback is the reply to a prompt no turn matches.
func (s *Server) fallback(prompt string) Step {
	if s.script.Fallback != "" {
		return Step{Text: s.script.Fallback}
	}
	if len(prompt) > 80 {
		prompt = prompt[:80]
	}
	return Step{Text: fmt.Sprintf("fakemodel: no scripted reply for %q", prompt)}
}

// userText is one user message's text and the tool results that follow it
// before the next user text.
type userText struct {
	text         string
	resultsAfter int
}

// addTurn appends one user message to out: its texts joined, or, when it
// carries tool results instead, their number added to the message before.
func addTurn(out []userText, texts []string, results int) []userText {
	if results > 0 {
		if len(out) == 0 {
			out = append(out, userText{})
		}
		out[len(out)-1].resultsAfter += results
		return out
	}
	return append(out, userText{text: strings.Join(texts, "\n")})
}

// nextID returns a fresh id with prefix.
func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s_fake%04d", prefix, s.ids)
}

// writeJSON writes v as a JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
	return status
}

// badRequest answers a body the server cannot read, in the API's error shape.
func badRequest(w http.ResponseWriter, err error) int {
	return writeJSON(w, http.StatusBadRequest, map[string]any{"type": "error",
		"error": map[string]any{"type": "invalid_request_error", "message": "fakemodel: " + err.Error(), "code": 400}})
}

// apiError answers a scripted failure with status in api's error shape:
// each CLI reads its own API's body to word its banner.
func apiError(w http.ResponseWriter, api API, status int) int {
	msg := fmt.Sprintf("fakemodel: scripted failure %d %s", status, http.StatusText(status))
	switch api {
	case Anthropic:
		kind := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
			404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}[status]
		if kind == "" {
			kind = "api_error"
		}
		return writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
	case OpenAI:
		code := map[int]string{401: "invalid_api_key", 429: "rate_limit_exceeded"}[status]
		if code == "" {
			code = "server_error"
		}
		return writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": code, "param": nil, "code": code}})
	default:
		kind := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
			404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status]
		if kind == "" {
			kind = "INTERNAL"
		}
		return writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": kind}})
	}
}

// sse writes server-sent events and flushes each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event; name "" writes a data-only event (Gemini's).
func (e *sse) event(name string, data any) {
	b, _ := json.Marshal(data)
	var buf bytes.Buffer
	if name != "" {
		fmt.Fprintf(&buf, "event: %s\n", name)
	}
	fmt.Fprintf(&buf, "data: %s\n\n", b)
	e.w.Write(buf.Bytes())
	if e.f != nil {
		e.f.Flush()
	}
}

// chunks splits s into pieces of about n bytes on rune boundaries, so
// streamed text arrives as deltas as it does from a real model.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i < len(s) && !utf8Start(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// jsonString returns v as compact JSON text.
func jsonString(v any) string {
	if v == nil {
		return "{}"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
