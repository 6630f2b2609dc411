package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/pkg/wire"
)

// Codes a result carries that are not the daemon's wire codes.
const (
	// codeUnreachable: agentd is not running, or the connection to it ended.
	codeUnreachable = "unreachable"
	// codeDisabled: the tool acts and this server was started without --yes.
	codeDisabled = "disabled"
	// codeCanceled: the client cancelled the call.
	codeCanceled = "canceled"
)

// arg is one argument of a tool: its name, its JSON schema (type,
// description, limits) and whether it must be given.
type arg struct {
	name     string
	schema   map[string]any
	required bool
}

// tool is one MCP tool as both servers declare it. Its handler gets the
// arguments decoded into the value newIn makes, only after they were
// checked against args: a malformed call never reaches it.
type tool struct {
	name     string
	desc     string
	args     []arg
	readOnly bool
	// nested names the fields of objects inside the arguments, for the
	// message when one has an unknown field.
	nested string
	newIn  func() any
	handle func(ctx context.Context, in any) *mcp.CallToolResult
}

// typedTool gives t a handler that receives its arguments as a T.
func typedTool[T any](t tool, h func(ctx context.Context, in T) *mcp.CallToolResult) tool {
	t.newIn = func() any { return new(T) }
	t.handle = func(ctx context.Context, in any) *mcp.CallToolResult { return h(ctx, *in.(*T)) }
	return t
}

// inputSchema is the tool's JSON schema: an object with exactly its
// arguments.
func (t tool) inputSchema() map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, a := range t.args {
		props[a.name] = a.schema
		if a.required {
			required = append(required, a.name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// takes lists the arguments for a message: "name (required), text".
func (t tool) takes() string {
	if len(t.args) == 0 {
		return "no arguments"
	}
	var names []string
	for _, a := range t.args {
		n := a.name
		if a.required {
			n += " (required)"
		}
		names = append(names, n)
	}
	return "arguments " + strings.Join(names, ", ")
}

// checkArgs checks raw against the tool's arguments and types: an unknown
// or missing argument or a wrong type is a malformed call, answered with a
// JSON-RPC invalid-params error that names the arguments that exist. The
// arguments are decoded into into.
func (t tool) checkArgs(raw json.RawMessage, into any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = json.RawMessage("{}")
	}
	var fields map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return malformed("the arguments of %s must be a JSON object; it takes %s", t.name, t.takes())
	}
	var unknown []string
	for k := range fields {
		if !slices.ContainsFunc(t.args, func(a arg) bool { return a.name == k }) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return malformed("%s has no argument %s; it takes %s", t.name, strings.Join(unknown, ", "), t.takes())
	}
	for _, a := range t.args {
		if v, ok := fields[a.name]; a.required && (!ok || bytes.Equal(v, []byte("null"))) {
			return malformed("%s needs the argument %q; it takes %s", t.name, a.name, t.takes())
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return t.typeProblem(err)
	}
	return nil
}

// typeProblem turns a decoding error into the malformed-call message.
func (t tool) typeProblem(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "an argument"
		}
		return malformed("%s: %s must be %s, not a JSON %s; it takes %s (see its input schema)", t.name, field, jsonTypeName(te.Type.Kind().String()), te.Value, t.takes())
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		hint := ""
		if t.nested != "" {
			hint = "; " + t.nested
		}
		return malformed("%s: unknown field %s inside an argument%s", t.name, f, hint)
	}
	return malformed("%s: the arguments do not fit its input schema: %s; it takes %s", t.name, strings.TrimPrefix(msg, "json: "), t.takes())
}

// jsonTypeName names a Go kind the way a JSON schema does.
func jsonTypeName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "true or false"
	case kind == "slice", kind == "array":
		return "an array"
	case kind == "map", kind == "struct", kind == "ptr":
		return "an object"
	}
	return kind
}

// malformed is the protocol error for a call that is not well formed.
func malformed(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// addTools registers tools on srv in order, with argument checking, and
// makes a call to a tool that does not exist a protocol error naming the
// tools that do (the SDK's own message names none).
func addTools(srv *mcp.Server, tools []tool) {
	var names []string
	for _, t := range tools {
		names = append(names, t.name)
		t := t
		mt := &mcp.Tool{Name: t.name, Description: t.desc, InputSchema: t.inputSchema(),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.readOnly}}
		srv.AddTool(mt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			in := t.newIn()
			if err := t.checkArgs(req.Params.Arguments, in); err != nil {
				return nil, err
			}
			return t.handle(ctx, in), nil
		})
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ct, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && ct.Params != nil && !slices.Contains(names, ct.Params.Name) {
				return nil, malformed("unknown tool %q; this server has %s", ct.Params.Name, strings.Join(names, ", "))
			}
			res, err := next(ctx, method, req)
			// The SDK lists tools by name; the order given here is the one
			// a model should reach for them in (look, then act).
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				slices.SortStableFunc(lr.Tools, func(a, b *mcp.Tool) int {
					return slices.Index(names, a.Name) - slices.Index(names, b.Name)
				})
			}
			return res, err
		}
	})
}

// answer is a successful result: the structured content is v's JSON object
// with "ok": true added, and the text is text, or that JSON when text is
// empty (for clients that show only text). extra content (an image) comes
// after the text.
func answer(v any, text string, extra ...mcp.Content) *mcp.CallToolResult {
	structured := withOK(v, true)
	if text == "" {
		b, _ := json.Marshal(structured)
		text = string(b)
	}
	content := append([]mcp.Content{&mcp.TextContent{Text: text}}, extra...)
	return &mcp.CallToolResult{Content: content, StructuredContent: structured}
}

// refusalBody is the structured content of a refused or failed call.
type refusalBody struct {
	OK        bool            `json:"ok"`
	Code      string          `json:"code"`
	Reason    string          `json:"reason"`
	Retryable bool            `json:"retryable"`
	Details   json.RawMessage `json:"details,omitempty"`
}

// refusal is a refused or failed call: a normal result (isError false)
// whose reason a model can relay.
func refusal(code, reason string, retryable bool, details json.RawMessage) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: "not done (" + code + "): " + reason}},
		StructuredContent: refusalBody{Code: code, Reason: reason, Retryable: retryable, Details: details},
	}
}

// failure turns an error from the daemon or the connection into a refusal.
func failure(err error) *mcp.CallToolResult {
	var we *wire.Error
	var ue *wire.UnreachableError
	switch {
	case errors.As(err, &we):
		return refusal(string(we.Code), we.Message, we.Retryable, we.Details)
	case errors.As(err, &ue):
		return refusal(codeUnreachable, ue.Error(), true, nil)
	case errors.Is(err, wire.ErrClosed):
		return refusal(codeUnreachable, "the connection to agentd ended during the call (agentd stopped or restarted); "+
			"it may or may not have taken effect: look, then call again", true, nil)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return refusal(codeCanceled, "the call was cancelled before agentd answered", true, nil)
	}
	return refusal(string(wire.CodeInternal), err.Error(), false, nil)
}

// withOK returns v's JSON object with "ok" set; a value that is not an
// object is put under "result".
func withOK(v any, ok bool) map[string]any {
	out := map[string]any{}
	b, err := json.Marshal(v)
	if err == nil {
		var fields map[string]json.RawMessage
		if json.Unmarshal(b, &fields) == nil && fields != nil {
			for k, f := range fields {
				out[k] = f
			}
		} else if v != nil {
			out["result"] = json.RawMessage(b)
		}
	}
	out["ok"] = ok
	return out
}
