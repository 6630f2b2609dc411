package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agentd/agentd/pkg/wire"
)

// Call is one request as a handler sees it.
type Call struct {
	Method string
	Params json.RawMessage // a JSON object, or nil when none was sent
	Conn   *Conn           // the connection it came on: its peer, notifications
}

// HandlerFunc answers one call. It returns the result to marshal, or an
// error that toWireError turns into a wire code. Handlers never write to the
// connection themselves (Conn.Notify is for notifications only).
type HandlerFunc func(ctx context.Context, call *Call) (any, error)

// Route is one method of the route table.
type Route struct {
	Method string
	// Mutates marks methods that change state: they are logged at info,
	// reads at debug.
	Mutates bool
	// Quick marks handlers that never block (no I/O, no waiting): they run
	// on the connection's reading goroutine, without a hand-off.
	Quick bool
	// Long, when set, says whether a call is long: a stream, a follow or a
	// wait that ends when its client or its own deadline says, not when
	// the daemon's work is done. A stop cancels long calls at once with
	// shutting_down instead of giving them the grace period, and an
	// upgrade they return ends with the stop too. Set from longRoutes.
	Long func(*Call) bool
	// Stream marks a long call whose answer only closes a stream (a log
	// follow): cut by a stop, it answers shutting_down even when its
	// handler returns a result.
	Stream bool
	Handle HandlerFunc
}

// longRoutes are the methods whose calls may be long (Route.Long), kept
// here rather than on each route so the domains' route lists stay theirs.
// A method named here must be registered.
var longRoutes = map[string]struct {
	long   func(*Call) bool
	stream bool
}{
	wire.MethodWait:   {long: always},
	wire.MethodAsk:    {long: always},
	wire.MethodAttach: {long: always},
	wire.MethodLogs:   {long: either(paramSet("follow"), paramSet("stream")), stream: true},
	// With ack, a push waits for the listener's acknowledgement.
	wire.MethodPushToChannel: {long: paramSet("ack")},
}

func always(*Call) bool { return true }

// either is true of a call when a or b is.
func either(a, b func(*Call) bool) func(*Call) bool {
	return func(c *Call) bool { return a(c) || b(c) }
}

// paramSet returns a test that the call's params hold field as true. A call
// whose params do not decode is not long: its handler refuses it at once.
func paramSet(field string) func(*Call) bool {
	quoted := []byte(`"` + field + `"`)
	return func(c *Call) bool {
		// Most calls do not name the field: no decoding for them (a
		// push's message may be 64 KiB).
		if !bytes.Contains(c.Params, quoted) {
			return false
		}
		var p map[string]json.RawMessage
		if json.Unmarshal(c.Params, &p) != nil {
			return false
		}
		return string(p[field]) == "true"
	}
}

// markLong sets Long and Stream on the routes named in long; naming a
// method that is not registered panics at start-up.
func (r *router) markLong(long map[string]struct {
	long   func(*Call) bool
	stream bool
}) {
	for m, l := range long {
		rt, ok := r.routes[m]
		if !ok {
			panic("daemon: long route not registered: " + m)
		}
		rt.Long, rt.Stream = l.long, l.stream
		r.routes[m] = rt
	}
}

// namespaces are the method prefixes agentd serves.
var namespaces = []string{"agent.", "channel."}

// router is the route table. agent.hello lists methods by reading it, so the
// advertised list and what runs cannot disagree.
type router struct {
	routes map[string]Route
	sorted []string // the method names, sorted; rebuilt by register
}

func newRouter() *router { return &router{routes: map[string]Route{}} }

// register adds routes; a duplicate name or one outside the namespaces is a
// programming error and panics at start-up.
func (r *router) register(routes ...Route) {
	for _, rt := range routes {
		if _, dup := r.routes[rt.Method]; dup {
			panic("daemon: method registered twice: " + rt.Method)
		}
		if namespaceOf(rt.Method) == "" || rt.Handle == nil {
			panic("daemon: bad route: " + rt.Method)
		}
		r.routes[rt.Method] = rt
	}
	r.sorted = make([]string, 0, len(r.routes))
	for m := range r.routes {
		r.sorted = append(r.sorted, m)
	}
	sort.Strings(r.sorted)
}

// methods returns the served method names, sorted. Routes are registered
// before the daemon serves, so the list is built once per registration.
func (r *router) methods() []string { return r.sorted }

// lookup finds the route for method, or an unknown_method error that says
// what is served.
func (r *router) lookup(method string) (Route, error) {
	if rt, ok := r.routes[method]; ok {
		return rt, nil
	}
	if namespaceOf(method) == "" {
		return Route{}, wire.Errorf(wire.CodeUnknownMethod,
			"unknown method %q: methods are in the namespaces agent.* and channel.*; agent.hello lists them", method)
	}
	return Route{}, wire.Errorf(wire.CodeUnknownMethod, "unknown method %q; agent.hello lists the methods this daemon serves", method)
}

func namespaceOf(method string) string {
	for _, ns := range namespaces {
		if strings.HasPrefix(method, ns) && len(method) > len(ns) {
			return ns
		}
	}
	return ""
}

// decodeParams decodes a call's params into T strictly: an unknown field or
// a wrong type is invalid_params naming the field, so a typo is not silently
// ignored.
func decodeParams[T any](call *Call) (T, error) {
	var v T
	if len(call.Params) == 0 {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(call.Params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, wire.Errorf(wire.CodeInvalidParams, "params of %s: %s", call.Method, paramsProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return v, wire.Errorf(wire.CodeInvalidParams, "params of %s: trailing data after the object", call.Method)
	}
	return v, nil
}

func paramsProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %q must be %s, not a JSON %s", te.Field, goTypeName(te.Type.String()), te.Value)
		}
		return fmt.Sprintf("must be %s, not a JSON %s", goTypeName(te.Type.String()), te.Value)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown field " + f + "; check the spelling against the protocol documentation"
	}
	return strings.TrimPrefix(msg, "json: ")
}

// goTypeName turns a Go type into words a JSON user recognises.
func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map["):
		return "an object"
	}
	return "an object"
}
