package fakemodel

import (
	"cmp"
	"encoding/json"
	"net/http"
)

// anthropicRequest is the part of a Messages request the server reads.
type anthropicRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Messages []json.RawMessage `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
}

// anthropicMessage is one message; content is a string or a list of blocks.
type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// anthropicTexts reads the user texts of a Messages conversation. A user
// message that carries a tool_result is a tool result (Claude Code puts
// reminders beside it), whatever text it also has.
func anthropicTexts(msgs []json.RawMessage) []userText {
	var out []userText
	for _, raw := range msgs {
		var m anthropicMessage
		if json.Unmarshal(raw, &m) != nil || m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			out = append(out, userText{text: s})
			continue
		}
		var blocks []anthropicBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		var texts []string
		results := 0
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "tool_result":
				results++
			}
		}
		out = addTurn(out, texts, results)
	}
	return out
}

// anthropic answers POST /v1/messages.
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return badRequest(w, err)
	}
	st := s.reply(anthropicTexts(req.Messages), len(req.Tools) > 0, rec)
	if st.Status != 0 {
		return apiError(w, Anthropic, st.Status)
	}
	model := cmp.Or(req.Model, "claude-fake")
	id := s.nextID("msg")
	var content []map[string]any
	stop := "end_turn"
	if st.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": st.Text})
	}
	var toolID string
	if st.Tool != nil {
		toolID = s.nextID("toolu")
		rec.CallID = toolID
		content = append(content, map[string]any{"type": "tool_use", "id": toolID, "name": st.Tool.Name, "input": orEmpty(st.Tool.Input)})
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": len(body) / 4, "output_tokens": 1 + len(st.Text)/4,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	pause(r, st.Lead)
	if !req.Stream {
		pause(r, st.Delay)
		return writeJSON(w, http.StatusOK, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": orEmptyList(content), "stop_reason": stop, "stop_sequence": nil, "usage": usage})
	}
	e := startSSE(w)
	e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": len(body) / 4, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
	index := 0
	if st.Text != "" {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, c := range chunks(st.Text, 16) {
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": c}})
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if st.Tool != nil {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": toolID, "name": st.Tool.Name, "input": map[string]any{}}})
		for _, c := range chunks(jsonString(st.Tool.Input), 16) {
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": c}})
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	pause(r, st.Delay)
	e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": usage["output_tokens"]}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
	return http.StatusOK
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func orEmptyList(l []map[string]any) []map[string]any {
	if l == nil {
		return []map[string]any{}
	}
	return l
}
