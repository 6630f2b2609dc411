package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Request is a call from a client: {"id", "method", "params"}. IDs are
// chosen by the client, must be unique among its calls in flight, and are
// at least 1: id 0 is reserved for error responses to frames whose id could
// not be read.
type Request struct {
	ID     uint64          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Response answers the Request with the same ID. Exactly one of Result and
// Error is set; a success whose result is JSON null carries Result "null".
type Response struct {
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Notification is an unsolicited message from the daemon (a channel
// delivery, a followed stream). It has no id and gets no response.
type Notification struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// nullResult is the result of a success that returns nothing.
var nullResult = json.RawMessage("null")

// DecodeRequest parses a frame body as a Request, strictly: the body must be
// valid UTF-8 JSON holding an object with an integer id of at least 1, a
// string method, and params that are absent, null or an object. On failure
// it returns an *Error (malformed_frame, or invalid_params for bad params)
// and the request's id when the id itself could be read, else 0, so the
// caller can still answer it.
func DecodeRequest(body []byte) (*Request, error) {
	if !utf8.Valid(body) {
		return nil, Errorf(CodeMalformedFrame, "message is not valid UTF-8; frames carry UTF-8 JSON")
	}
	if req, ok := decodeRequestFast(body); ok {
		return req, nil
	}
	return decodeRequestSlow(body)
}

// decodeRequestSlow is DecodeRequest for any body, with encoding/json.
func decodeRequestSlow(body []byte) (*Request, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, Errorf(CodeMalformedFrame, "message is not a JSON object; send {\"id\": N, \"method\": \"agent.hello\", \"params\": {}}")
	}
	var raw struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, Errorf(CodeMalformedFrame, "message is not valid JSON: %s", jsonProblem(err))
	}
	req := &Request{}
	if raw.ID == nil {
		return nil, Errorf(CodeMalformedFrame, "request has no \"id\"; give every request an integer id of at least 1")
	}
	id, err := strconv.ParseUint(string(raw.ID), 10, 64)
	if err != nil || id == 0 {
		return nil, Errorf(CodeMalformedFrame, "request id %s is not an integer from 1 to %d", truncate(raw.ID, 40), uint64(1<<64-1))
	}
	req.ID = id
	if raw.Method == nil || bytes.Equal(raw.Method, nullResult) {
		return req, Errorf(CodeMalformedFrame, "request %d has no \"method\" string; methods look like \"agent.hello\"", id)
	}
	if raw.Method[0] != '"' || json.Unmarshal(raw.Method, &req.Method) != nil {
		return req, Errorf(CodeMalformedFrame, "request %d: method must be a string such as \"agent.hello\", not %s", id, jsonKind(raw.Method))
	}
	if len(raw.Params) > 0 && !bytes.Equal(raw.Params, nullResult) {
		if raw.Params[0] != '{' {
			return req, Errorf(CodeInvalidParams, "params of %s must be a JSON object, not %s", req.Method, jsonKind(raw.Params))
		}
		req.Params = raw.Params
	}
	return req, nil
}

// Incoming is a message a client receives: a Response or a Notification.
type Incoming struct {
	Response     *Response
	Notification *Notification
}

// DecodeIncoming parses a frame body sent by the daemon. A message with an
// id is a response and must carry exactly one of result and error; one
// without an id is a notification and must carry a method.
func DecodeIncoming(body []byte) (Incoming, error) {
	var raw struct {
		ID     *uint64         `json:"id"`
		Method *string         `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return Incoming{}, fmt.Errorf("decode message: %s", jsonProblem(err))
	}
	if raw.ID == nil {
		if raw.Method == nil {
			return Incoming{}, errors.New("message has neither id nor method")
		}
		return Incoming{Notification: &Notification{Method: *raw.Method, Params: raw.Params}}, nil
	}
	resp := &Response{ID: *raw.ID}
	hasResult, hasError := raw.Result != nil, raw.Error != nil && !bytes.Equal(raw.Error, nullResult)
	switch {
	case hasResult && hasError:
		return Incoming{}, fmt.Errorf("response %d has both result and error", resp.ID)
	case !hasResult && !hasError:
		return Incoming{}, fmt.Errorf("response %d has neither result nor error", resp.ID)
	case hasResult:
		resp.Result = raw.Result
	default:
		var e Error
		if err := json.Unmarshal(raw.Error, &e); err != nil {
			return Incoming{}, fmt.Errorf("response %d: decode error object: %s", resp.ID, jsonProblem(err))
		}
		if e.Code == "" {
			return Incoming{}, fmt.Errorf("response %d: error object has no code", resp.ID)
		}
		resp.Error = &e
	}
	return Incoming{Response: resp}, nil
}

// AppendResponse appends the JSON of a response to dst. It writes result as
// given (it must be valid JSON; nil means null) rather than re-validating it,
// which keeps the daemon's hot path cheap.
func AppendResponse(dst []byte, id uint64, result json.RawMessage, e *Error) ([]byte, error) {
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendUint(dst, id, 10)
	if e != nil {
		b, err := json.Marshal(e)
		if err != nil {
			return dst, err
		}
		dst = append(dst, `,"error":`...)
		dst = append(dst, b...)
	} else {
		if len(result) == 0 {
			result = nullResult
		}
		dst = append(dst, `,"result":`...)
		dst = append(dst, result...)
	}
	return append(dst, '}'), nil
}

// jsonProblem shortens encoding/json's error text for a person.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	return err.Error()
}

// jsonKind names the kind of a JSON value for an error message.
func jsonKind(v json.RawMessage) string {
	switch v[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
