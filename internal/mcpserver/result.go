package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

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

// arg is one argument of a tool, as its input schema declares it.
type arg struct {
	name     string
	required bool
}

// tool is one MCP tool as both servers declare it. Its handler gets the
// arguments decoded into the value newIn makes, only after they were
// checked against its input schema: a malformed call never reaches it.
type tool struct {
	name string
	desc string
	// in is the Go type of the arguments (a struct); its fields' tags make
	// the input schema (see schema.go). args are its arguments in order,
	// filled from it by addTools.
	in   reflect.Type
	args []arg
	// The behaviour hints every tool declares (MCP's annotations):
	// readOnly tools change nothing; an acting tool is destructive when it
	// can undo or overwrite (typing into a program, ending one),
	// idempotent when a second identical call changes nothing more, and
	// openWorld when what it reaches is not only agentd's own state (a
	// program it starts or types into, the screen's applications, the Claude
	// Code session a push lands in).
	readOnly, destructive, idempotent, openWorld bool
	// out is the Go type of a successful result's structured content; its
	// JSON schema (with ok) is the tool's outputSchema.
	out reflect.Type
	// nested names the fields of objects inside the arguments, for the
	// message when one has an unknown field.
	nested string
	// check is the input schema compiled (check.go), set by prepare.
	check  *argCheck
	newIn  func() any
	handle func(ctx context.Context, in any) *mcp.CallToolResult
}

// typedTool gives t a handler that receives its arguments as a T.
func typedTool[T any](t tool, h func(ctx context.Context, in T) *mcp.CallToolResult) tool {
	t.in = reflect.TypeFor[T]()
	t.newIn = func() any { return new(T) }
	t.handle = func(ctx context.Context, in any) *mcp.CallToolResult { return h(ctx, *in.(*T)) }
	return t
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
// or missing argument or a wrong type is a malformed call, answered with an
// isError result that names the arguments that exist. The arguments are
// decoded into into, and returned as decoded JSON for checkLimits.
func (t tool) checkArgs(raw json.RawMessage, into any) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = json.RawMessage("{}")
	}
	var fields map[string]any
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return nil, malformed("the arguments of %s must be a JSON object; it takes %s", t.name, t.takes())
	}
	var unknown []string
	for k := range fields {
		if !slices.ContainsFunc(t.args, func(a arg) bool { return a.name == k }) {
			unknown = append(unknown, fmt.Sprintf("%q", k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, malformed("%s has no argument %s; it takes %s", t.name, strings.Join(unknown, ", "), t.takes())
	}
	for _, a := range t.args {
		if v, ok := fields[a.name]; a.required && (!ok || v == nil) {
			return nil, malformed("%s needs the argument %q; it takes %s", t.name, a.name, t.takes())
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return nil, t.typeProblem(err)
	}
	return fields, nil
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

// badArgs is a call whose arguments do not fit the tool: answered as an
// isError result (code invalid_arguments) so the model can correct itself.
type badArgs struct{ msg string }

func (e *badArgs) Error() string { return e.msg }

// malformed is the error for a call whose arguments are not well formed.
func malformed(format string, args ...any) error {
	return &badArgs{msg: fmt.Sprintf(format, args...)}
}

// codeBadArgs marks a result refused for its arguments.
const codeBadArgs = "invalid_arguments"

// requestKey carries the call's request to a handler (progress
// notifications need its session and token).
type requestKey struct{}

// requestOf is the call's request, or nil.
func requestOf(ctx context.Context) *mcp.CallToolRequest {
	r, _ := ctx.Value(requestKey{}).(*mcp.CallToolRequest)
	return r
}

// outputSchema is a tool's outputSchema: either its result type's schema
// with ok true (generated from the contract's Go types, so a field added
// there is declared at once), or a refusal. MCP clients check
// structuredContent against it, refusals (isError) included.
func (t tool) outputSchema() (map[string]any, error) {
	out := t.out
	if out == nil {
		out = reflect.TypeFor[struct{}]()
	}
	s, err := jsonschema.ForType(out, &jsonschema.ForOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s's output schema: %w", t.name, err)
	}
	var success map[string]any
	b, _ := json.Marshal(s)
	if err := json.Unmarshal(b, &success); err != nil {
		return nil, err
	}
	props, _ := success["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		success["properties"] = props
	}
	props["ok"] = map[string]any{"const": true}
	props["truncated"] = map[string]any{"type": "string", "description": "set when --max-output cut this result: what was cut"}
	req, _ := success["required"].([]any)
	success["required"] = append(req, "ok")
	return map[string]any{"type": "object", "anyOf": []any{success, refusalSchema}}, nil
}

// refusalSchema is the structured content of every refused call.
var refusalSchema = map[string]any{"type": "object", "required": []string{"ok", "code", "reason", "retryable"},
	"properties": map[string]any{
		"ok":        map[string]any{"const": false},
		"code":      map[string]any{"type": "string", "description": "agentd's error code, or unreachable, disabled, canceled, invalid_arguments"},
		"reason":    map[string]any{"type": "string", "description": "what went wrong and how to fix it"},
		"retryable": map[string]any{"type": "boolean"},
		"details":   map[string]any{"description": "more about the failure, as agentd gave it"},
		"truncated": map[string]any{"type": "string"},
	}}

// addTools registers tools on srv in order, with argument checking
// (against the input schema, its limits included), caps each result at
// maxOutput bytes of text (0: no cap), and makes a call to a tool that
// does not exist a protocol error naming the tools that do (the SDK's own
// message names none).
func addTools(srv *mcp.Server, tools []tool, maxOutput int) error {
	_, err := addToolsServed(srv, tools, maxOutput)
	return err
}

// addToolsServed is addTools, returning each tool's handler by name as a
// fastHandler: what the SDK runs for a call, for the framing to run itself
// (see lineTransport.fast).
func addToolsServed(srv *mcp.Server, tools []tool, maxOutput int) (map[string]fastHandler, error) {
	var names []string
	served := map[string]fastHandler{}
	for _, t := range tools {
		names = append(names, t.name)
		t, in, resolved, err := t.prepare()
		if err != nil {
			return nil, err
		}
		outSchema, err := t.outputSchema()
		if err != nil {
			return nil, err
		}
		mt := &mcp.Tool{Name: t.name, Description: t.desc, InputSchema: in, OutputSchema: outSchema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.readOnly, DestructiveHint: &t.destructive,
				IdempotentHint: t.idempotent, OpenWorldHint: &t.openWorld}}
		handle := func(ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult {
			in := t.newIn()
			fields, err := t.checkArgs(req.Params.Arguments, in)
			if err != nil {
				return argsRefusal(err)
			}
			if err := t.checkLimits(resolved, fields); err != nil {
				return argsRefusal(err)
			}
			res := t.handle(context.WithValue(ctx, requestKey{}, req), in)
			return capResult(res, maxOutput)
		}
		srv.AddTool(mt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return handle(ctx, req), nil
		})
		name := t.name
		served[name] = func(ctx context.Context, args json.RawMessage) *mcp.CallToolResult {
			// A request without a session: such a call sends no progress
			// (the framing serves none that asks for it).
			return handle(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: args}})
		}
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ct, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && ct.Params != nil && !slices.Contains(names, ct.Params.Name) {
				// MCP keeps an unknown tool a protocol error.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("unknown tool %q; this server has %s", ct.Params.Name, strings.Join(names, ", "))}
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
	return served, nil
}

// argsRefusal is the isError result for arguments that do not fit.
func argsRefusal(err error) *mcp.CallToolResult {
	return refusal(codeBadArgs, err.Error(), false, nil)
}

// prepare generates t's input schema: it returns t with its arguments and
// compiled check set, the schema as the tool declares it, and the schema
// resolved for jsonschema-go's validator.
func (t tool) prepare() (tool, map[string]any, *jsonschema.Resolved, error) {
	schema, args, err := inputSchema(t.in)
	if err != nil {
		return t, nil, nil, fmt.Errorf("%s's input schema: %w", t.name, err)
	}
	t.args = args
	in, err := schemaMap(schema)
	if err != nil {
		return t, nil, nil, fmt.Errorf("%s's input schema: %w", t.name, err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return t, nil, nil, fmt.Errorf("%s's input schema: %w", t.name, err)
	}
	if t.check, err = compileSchema(in); err != nil {
		return t, nil, nil, fmt.Errorf("%s's input schema does not compile to a check: %w", t.name, err)
	}
	return t, in, resolved, nil
}

// checkLimits checks the arguments (decoded JSON) against the input
// schema's limits (minimum, maximum, enum, pattern, item counts), which
// the decoding in checkArgs does not. The compiled check passes a call
// that fits; one it refuses is checked by jsonschema-go, whose error says
// what does not fit (see check.go).
func (t tool) checkLimits(rs *jsonschema.Resolved, args map[string]any) error {
	if args == nil {
		args = map[string]any{}
	}
	if t.check != nil && t.check.ok(args) {
		return nil
	}
	if err := rs.Validate(args); err != nil {
		return malformed("%s: %s; see its input schema (it takes %s)", t.name, schemaProblem(err), t.takes())
	}
	return nil
}

// schemaProblem words a schema validation error: "limit: 0 is less than 1
// (minimum)" rather than the validator's JSON pointers and rationals.
func schemaProblem(err error) string {
	msg := strings.TrimPrefix(err.Error(), "validating root: ")
	msg = strings.ReplaceAll(msg, "validating /properties/", "")
	parts := strings.Split(msg, ": ")
	for k, p := range parts {
		if !schemaKeywords[p] {
			continue
		}
		path := "an argument"
		if k > 0 {
			path = parts[k-1]
			path = strings.ReplaceAll(path, "/items/properties/", "[].")
			path = strings.ReplaceAll(path, "/items", "[]")
			path = strings.ReplaceAll(path, "properties/", "")
		}
		detail := strings.Join(parts[k+1:], ": ")
		detail = rationalOne.ReplaceAllString(detail, "$1")
		detail = trailingZeros.ReplaceAllString(detail, "$1")
		return fmt.Sprintf("%s: %s (%s)", path, detail, p)
	}
	return msg
}

// schemaKeywords are the checks a validation error names.
var schemaKeywords = map[string]bool{"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"enum": true, "const": true, "pattern": true, "minLength": true, "maxLength": true, "minItems": true, "maxItems": true,
	"required": true, "type": true}

var (
	rationalOne   = regexp.MustCompile(`(-?\d+)/1\b`)
	trailingZeros = regexp.MustCompile(`(\d+)\.0+\b`)
)

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
	Truncated string          `json:"truncated,omitempty"`
}

// refusal is a refused or failed call: a tool result with isError set
// (MCP's tool-level error) whose reason names the fix, so the model can
// correct itself or relay it.
func refusal(code, reason string, retryable bool, details json.RawMessage) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError:           true,
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
		return refusal(string(we.Code), forModels(we.Message), we.Retryable, we.Details)
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

// cliAdvice matches the agentctl commands the daemon's messages advise: a
// verb (channel list is one), --force, a session's name, and the one
// further argument the daemon's advice spells (send's --keys, wait's
// --until, --ready and --state, spawn's -- command).
var cliAdvice = regexp.MustCompile("`?agentctl (channel list|[a-z]+)( --force)?( [a-z0-9][a-z0-9._-]*)?( --keys [a-z0-9+]+| --until \\.\\.\\.| --ready| --state [a-z_,]+| -- [a-z0-9._-]+)?`?")

// deskAdvice matches the agentctl desktop commands the daemon advises,
// which the desktops, desktop_new and desktop_rm tools do. NAME is the
// daemon's placeholder for any desktop's.
var deskAdvice = regexp.MustCompile("`?agentctl desktop (ls|new|rm( --force)?( NAME| [a-z0-9][a-z0-9._-]*)?)`?")

// toolVerbs are the agentctl verbs this server has a tool for.
var toolVerbs = map[string]string{"stop": "stop", "restart": "restart", "rm": "rm", "status": "status", "send": "send", "spawn": "spawn",
	"logs": "logs", "list": "list", "wait": "wait", "screenshot": "screenshot", "channel list": "channels", "snapshot": "snapshot",
	"ask": "ask", "resize": "resize"}

// namelessVerbs take no session's name: the word after them is the
// sentence's ("agentctl list shows the sessions").
var namelessVerbs = map[string]bool{"list": true, "channel list": true, "screenshot": true}

// cliVerbs are agentctl's other verbs, which have no tool here: advice to
// run one becomes advice to ask the user. A word after "agentctl" that is
// none of these ("run agentctl as that user") is not a command.
var cliVerbs = map[string]bool{"attach": true, "approve": true, "deny": true, "reconcile": true, "diff": true, "record": true,
	"view": true, "watch": true, "doctor": true, "install": true, "serve": true, "version": true, "desktop": true, "channel": true,
	"mcp": true, "run": true, "signal": true, "kill": true}

// forModels rewrites the daemon's advice for a person at a shell ("agentctl
// rm x") into the tool call that does it here, or, where no tool does, into
// advice to ask the user: a model is never told to run what it cannot.
func forModels(reason string) string {
	if !strings.Contains(reason, "agentctl ") {
		return reason
	}
	reason = deskAdvice.ReplaceAllStringFunc(reason, func(m string) string {
		sm := deskAdvice.FindStringSubmatch(m)
		verb, _, _ := strings.Cut(sm[1], " ")
		tool := map[string]string{"ls": "desktops", "new": "desktop_new", "rm": "desktop_rm"}[verb]
		name := sm[3]
		if name == " NAME" {
			name = ""
		}
		return toolAdvice(tool, name, sm[2] != "", "")
	})
	reason = cliAdvice.ReplaceAllStringFunc(reason, func(m string) string {
		sm := cliAdvice.FindStringSubmatch(m)
		verb, force, name, more := sm[1], sm[2] != "", sm[3], sm[4]
		tool, ok := toolVerbs[verb]
		switch {
		case !ok && !cliVerbs[verb]:
			return m
		case !ok:
			return "(ask the user to run `" + strings.Trim(m, "`") + "`)"
		case namelessVerbs[verb]:
			return toolAdvice(tool, "", force, "") + name + more
		}
		return toolAdvice(tool, name, force, more)
	})
	// spawn's --desktop is the spawn tool's desktop argument.
	return strings.ReplaceAll(reason, "spawn with --desktop new", `spawn with desktop "new"`)
}

// toolAdvice names the tool call that does what an agentctl command
// would: "the rm tool (name \"x\", force true)". more is the command's
// further argument as cliAdvice matched it, said as the tool's.
func toolAdvice(tool, name string, force bool, more string) string {
	var args []string
	if name = strings.TrimSpace(name); name != "" {
		args = append(args, fmt.Sprintf("name %q", name))
	}
	if force {
		args = append(args, "force true")
	}
	switch more = strings.TrimSpace(more); {
	case strings.HasPrefix(more, "--keys "):
		args = append(args, fmt.Sprintf("keys [%q]", strings.TrimPrefix(more, "--keys ")))
	case more == "--until ...":
		args = append(args, "until: a regular expression its screen will show")
	case more == "--ready":
		args = append(args, "ready true")
	case strings.HasPrefix(more, "--state "):
		states, _ := json.Marshal(strings.Split(strings.TrimPrefix(more, "--state "), ","))
		args = append(args, "states "+string(states))
	case strings.HasPrefix(more, "-- "):
		args = append(args, fmt.Sprintf("argv [%q]", strings.TrimPrefix(more, "-- ")))
	}
	if len(args) == 0 {
		return "the " + tool + " tool"
	}
	return "the " + tool + " tool (" + strings.Join(args, ", ") + ")"
}

// capResult cuts a result to limit bytes of text: each text block, and the
// strings of the structured content, longest first, until its JSON fits.
// What was cut is said in the text and in structured "truncated".
func capResult(res *mcp.CallToolResult, limit int) *mcp.CallToolResult {
	if res == nil || limit <= 0 {
		return res
	}
	var notes []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && len(tc.Text) > limit {
			notes = append(notes, fmt.Sprintf("text cut to %d of %d bytes", limit, len(tc.Text)))
			tc.Text = cutUTF8(tc.Text, limit) + fmt.Sprintf("\n[cut by --max-output: %d of %d bytes shown]", limit, len(tc.Text))
		}
	}
	var fields map[string]any
	if b, err := json.Marshal(res.StructuredContent); err == nil && len(b) > limit && json.Unmarshal(b, &fields) == nil && fields != nil {
		refs, lists := stringRefs(fields)
		cut := 0
		// Long strings first (answers, output, lines), down to
		// minCutString: names, times and codes stay whole.
		for range 256 {
			slices.SortFunc(refs, func(a, b *string) int { return len(*b) - len(*a) })
			if len(refs) == 0 || len(*refs[0]) <= minCutString || len(b) <= limit {
				break
			}
			p := refs[0]
			keep := max(minCutString, len(*p)-(len(b)-limit)-32)
			if keep >= len(*p) {
				keep = max(minCutString, len(*p)/2)
			}
			cut += len(*p) - len(cutUTF8(*p, keep))
			*p = cutUTF8(*p, keep)
			b, _ = json.Marshal(fields)
		}
		if cut > 0 {
			notes = append(notes, fmt.Sprintf("strings in the structured content cut by %d bytes", cut))
		}
		// Then lists of lines (a screen): the first lines go, the last
		// (where a prompt and the newest output are) stay.
		dropped := 0
		for _, l := range lists {
			for len(b) > limit && len(l.items()) > 1 {
				l.dropFirst()
				dropped++
				b, _ = json.Marshal(fields)
			}
		}
		if dropped > 0 {
			notes = append(notes, fmt.Sprintf("%d lines dropped from the top", dropped))
		}
		if len(b) > limit {
			notes = append(notes, "still over the cap: ask for less (a smaller limit or tail, a region)")
		}
		if cut > 0 || dropped > 0 {
			res.StructuredContent = fields
		}
	}
	if len(notes) == 0 {
		return res
	}
	note := "cut by --max-output " + strconv.Itoa(limit) + ": " + strings.Join(notes, "; ")
	switch sc := res.StructuredContent.(type) {
	case map[string]any:
		sc["truncated"] = note
	case refusalBody:
		sc.Truncated = note
		res.StructuredContent = sc
	default:
		var m map[string]any
		if b, err := json.Marshal(sc); err == nil && json.Unmarshal(b, &m) == nil && m != nil {
			m["truncated"] = note
			res.StructuredContent = m
		}
	}
	return res
}

// minCutString is the length below which a string is never cut.
const minCutString = 64

// stringList is a JSON array of strings inside decoded structured content,
// to drop lines from.
type stringList struct {
	parent map[string]any
	key    string
}

func (l stringList) items() []any { return l.parent[l.key].([]any) }
func (l stringList) dropFirst()   { l.parent[l.key] = l.items()[1:] }

// stringRefs turns every string inside v (decoded JSON) into a *string,
// in place, and returns them, so they can be cut and marshalled again;
// and the arrays of strings held by an object key.
func stringRefs(v any) ([]*string, []stringList) {
	var refs []*string
	var lists []stringList
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok {
					p := &s
					x[k] = p
					refs = append(refs, p)
					continue
				}
				if arr, ok := e.([]any); ok && len(arr) > 0 {
					if _, isStr := arr[0].(string); isStr {
						lists = append(lists, stringList{parent: x, key: k})
					}
				}
				walk(e)
			}
		case []any:
			for i, e := range x {
				if s, ok := e.(string); ok {
					p := &s
					x[i] = p
					refs = append(refs, p)
				} else {
					walk(e)
				}
			}
		}
	}
	walk(v)
	return refs, lists
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
