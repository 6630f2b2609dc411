package fakemodel

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// openaiRequest is the part of a Responses request the server reads.
type openaiRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Input  json.RawMessage   `json:"input"`
	Tools  []json.RawMessage `json:"tools"`
}

type openaiItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type openaiPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// openaiTexts reads the user texts of a Responses input: user messages,
// and the tool outputs (function_call_output and its kin) that follow.
func openaiTexts(input json.RawMessage) []userText {
	var s string
	if json.Unmarshal(input, &s) == nil {
		return []userText{{text: s}}
	}
	var items []openaiItem
	if json.Unmarshal(input, &items) != nil {
		return nil
	}
	var out []userText
	for _, it := range items {
		switch {
		case strings.HasSuffix(it.Type, "_call_output"):
			out = addTurn(out, nil, 1)
		case (it.Type == "message" || it.Type == "") && it.Role == "user":
			var text string
			if json.Unmarshal(it.Content, &text) != nil {
				var parts []openaiPart
				json.Unmarshal(it.Content, &parts)
				var texts []string
				for _, p := range parts {
					if p.Type == "input_text" || p.Type == "text" {
						texts = append(texts, p.Text)
					}
				}
				text = strings.Join(texts, "\n")
			}
			out = append(out, userText{text: text})
		}
	}
	return out
}

// openaiToolType is the type a tool was declared with ("function",
// "custom", ...), "" when the request did not declare it.
func openaiToolType(tools []json.RawMessage, name string) string {
	for _, raw := range tools {
		var t struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name == name {
			return t.Type
		}
	}
	return ""
}

// openai answers POST /v1/responses with the event stream Codex reads.
func (s *Server) openai(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	var req openaiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return badRequest(w, err)
	}
	st := s.reply(openaiTexts(req.Input), len(req.Tools) > 0, rec)
	if st.Status != 0 {
		return apiError(w, OpenAI, st.Status)
	}
	model := cmp.Or(req.Model, "gpt-fake")
	respID := s.nextID("resp")
	var output []map[string]any
	if st.Text != "" {
		output = append(output, map[string]any{"type": "message", "id": s.nextID("msg"), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": st.Text, "annotations": []any{}}}})
	}
	if st.Tool != nil {
		callID := s.nextID("call")
		rec.CallID = callID
		if openaiToolType(req.Tools, st.Tool.Name) == "custom" {
			input, _ := st.Tool.Input["input"].(string)
			output = append(output, map[string]any{"type": "custom_tool_call", "id": s.nextID("ctc"), "status": "completed",
				"call_id": callID, "name": st.Tool.Name, "input": input})
		} else {
			output = append(output, map[string]any{"type": "function_call", "id": s.nextID("fc"), "status": "completed",
				"call_id": callID, "name": st.Tool.Name, "arguments": jsonString(st.Tool.Input)})
		}
	}
	usage := map[string]any{"input_tokens": len(body) / 4, "output_tokens": 1 + len(st.Text)/4, "total_tokens": len(body)/4 + 1 + len(st.Text)/4,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	response := func(status string, out []map[string]any) map[string]any {
		resp := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"model": model, "output": orEmptyList(out)}
		if status == "completed" {
			resp["usage"] = usage
		}
		return resp
	}
	pause(r, st.Lead)
	if !req.Stream {
		pause(r, st.Delay)
		return writeJSON(w, http.StatusOK, response("completed", output))
	}
	e := startSSE(w)
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		e.event(typ, fields)
	}
	ev("response.created", map[string]any{"response": response("in_progress", nil)})
	ev("response.in_progress", map[string]any{"response": response("in_progress", nil)})
	for i, item := range output {
		id := item["id"]
		started := map[string]any{}
		for k, v := range item {
			started[k] = v
		}
		started["status"] = "in_progress"
		switch item["type"] {
		case "message":
			started["content"] = []any{}
			ev("response.output_item.added", map[string]any{"output_index": i, "item": started})
			ev("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, c := range chunks(st.Text, 16) {
				ev("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": c, "logprobs": []any{}})
			}
			ev("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": st.Text, "logprobs": []any{}})
			ev("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": st.Text, "annotations": []any{}}})
		case "function_call", "custom_tool_call":
			// A function's JSON arguments and a custom tool's free-form
			// input stream alike, under their own names.
			field, events := "arguments", "response.function_call_arguments"
			if item["type"] == "custom_tool_call" {
				field, events = "input", "response.custom_tool_call_input"
			}
			args := item[field].(string)
			started[field] = ""
			ev("response.output_item.added", map[string]any{"output_index": i, "item": started})
			for _, c := range chunks(args, 16) {
				ev(events+".delta", map[string]any{"item_id": id, "output_index": i, "delta": c})
			}
			ev(events+".done", map[string]any{"item_id": id, "output_index": i, field: args})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	pause(r, st.Delay)
	ev("response.completed", map[string]any{"response": response("completed", output)})
	return http.StatusOK
}

// pause waits d, or less when the client goes away.
func pause(r *http.Request, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}
