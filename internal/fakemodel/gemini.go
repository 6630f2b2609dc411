package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"
)

// geminiRequest is the part of a generateContent request the server reads.
type geminiRequest struct {
	Contents         []geminiContent   `json:"contents"`
	Tools            []json.RawMessage `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

type geminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text             string          `json:"text"`
		FunctionResponse json.RawMessage `json:"functionResponse"`
	} `json:"parts"`
}

// geminiTexts reads the user texts of a Gemini conversation; a user turn of
// functionResponse parts is a tool result.
func geminiTexts(contents []geminiContent) []userText {
	var out []userText
	for _, c := range contents {
		if c.Role != "user" && c.Role != "" {
			continue
		}
		var texts []string
		results := 0
		for _, p := range c.Parts {
			if len(p.FunctionResponse) > 0 {
				results++
			} else if p.Text != "" {
				texts = append(texts, p.Text)
			}
		}
		out = addTurn(out, texts, results)
	}
	return out
}

// gemini answers :streamGenerateContent (stream) and :generateContent.
// A request for JSON (Gemini CLI's next-speaker check, its model router)
// gets a JSON text made from the request's schema instead of the script.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request, body []byte, rec *Request, stream bool) int {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return badRequest(w, err)
	}
	var st Step
	if req.GenerationConfig.ResponseMimeType == "application/json" {
		texts := geminiTexts(req.Contents)
		if len(texts) > 0 {
			rec.Prompt = texts[len(texts)-1].text
		}
		schema := req.GenerationConfig.ResponseJSONSchema
		if len(schema) == 0 {
			schema = req.GenerationConfig.ResponseSchema
		}
		st = Step{Text: jsonString(fillSchema(schema, ""))}
	} else {
		st = s.reply(geminiTexts(req.Contents), len(req.Tools) > 0, rec)
	}
	if st.Status != 0 {
		return apiError(w, Gemini, st.Status)
	}
	usage := map[string]any{"promptTokenCount": len(body) / 4, "candidatesTokenCount": 1 + len(st.Text)/4,
		"totalTokenCount": len(body)/4 + 1 + len(st.Text)/4}
	chunk := func(parts []map[string]any, last bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		resp := map[string]any{"candidates": []any{cand}, "modelVersion": "gemini-fake", "responseId": s.nextID("gresp")}
		if last {
			cand["finishReason"] = "STOP"
			resp["usageMetadata"] = usage
		}
		return resp
	}
	var parts []map[string]any
	if st.Text != "" {
		parts = append(parts, map[string]any{"text": st.Text})
	}
	if st.Tool != nil {
		// Gemini matches a functionResponse to its call by name; the id
		// is for the record (and newer clients echo it).
		rec.CallID = s.nextID("gcall")
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": st.Tool.Name, "args": orEmpty(st.Tool.Input), "id": rec.CallID}})
	}
	pause(r, st.Lead)
	if !stream {
		pause(r, st.Delay)
		return writeJSON(w, http.StatusOK, chunk(orEmptyList(parts), true))
	}
	e := startSSE(w)
	if st.Text != "" {
		for _, c := range chunks(st.Text, 16) {
			e.event("", chunk([]map[string]any{{"text": c}}, false))
		}
	}
	pause(r, st.Delay)
	var last []map[string]any
	if st.Tool != nil {
		last = parts[len(parts)-1:]
	} else {
		last = []map[string]any{{"text": ""}}
	}
	e.event("", chunk(last, true))
	return http.StatusOK
}

// fillSchema makes a value that satisfies a JSON schema (OpenAPI's upper
// case type names too) with the least content: the first enum value, empty
// strings, zeros, every required property. Gemini CLI's next-speaker
// check is answered "user", so it never continues a turn by itself.
func fillSchema(raw json.RawMessage, name string) any {
	var sch struct {
		Type       any                        `json:"type"`
		Enum       []any                      `json:"enum"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
		Items      json.RawMessage            `json:"items"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &sch) != nil {
		return map[string]any{}
	}
	if name == "next_speaker" {
		return "user"
	}
	if len(sch.Enum) > 0 {
		return sch.Enum[0]
	}
	typ, _ := sch.Type.(string)
	if l, ok := sch.Type.([]any); ok && len(l) > 0 {
		typ, _ = l[0].(string)
	}
	switch strings.ToLower(typ) {
	case "string":
		return ""
	case "number", "integer":
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	}
	obj := map[string]any{}
	for k, p := range sch.Properties {
		obj[k] = fillSchema(p, k)
	}
	return obj
}
