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

	// stop ends when the daemon begins to stop (nil outside a daemon's
	// dispatch); a long call's context ends with it (Long).
	stop context.Context
	// long is set once the call is long (Long); apart, so the many calls
	// that are not long carry one pointer for it.
	long *longCall
}

// longCall is what a long call adds: its context and what ends that
// context's tie to the stop.
type longCall struct {
	ctx    context.Context
	unlong func()
}

// Long makes the call a long one and returns its context, which also ends
// when the daemon begins to stop: a stop then cuts it at once with
// shutting_down instead of giving it the grace period. dispatch does it
// for a route that Lasts Long; a handler of a LongWhenAsked route calls it
// once its params say the call waits (a log follow, a push with ack).
// Later calls return the same context.
func (c *Call) Long(ctx context.Context) context.Context {
	switch {
	case c.long != nil:
		return c.long.ctx
	case c.stop == nil:
		return ctx
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.stop, cancel)
	c.long = &longCall{ctx: ctx, unlong: func() { stop(); cancel() }}
	return ctx
}

// HandlerFunc answers one call. It returns the result to marshal, or an
// error that toWireError turns into a wire code. Handlers never write to the
// connection themselves (Conn.Notify is for notifications only).
type HandlerFunc func(ctx context.Context, call *Call) (any, error)

// Lasts says how long a route's calls may last, which is what a stop does
// with them.
type Lasts uint8

const (
	// Brief calls end when the daemon's work is done: a stop lets them
	// finish within the grace period.
	Brief Lasts = iota
	// Long calls (a wait, an ask, an attach) end when their client or
	// their own deadline says: every one is long (Call.Long).
	Long
	// LongWhenAsked calls are long when their params ask them to wait (a
	// log follow or stream, a push with ack): the handler says so with
	// Call.Long once it has decoded them.
	LongWhenAsked
)

// Route is one method of the route table, with every fact about it.
type Route struct {
	Method string
	// Mutates marks methods that change state: they are logged at info,
	// reads at debug.
	Mutates bool
	// Quick marks handlers that never block (no I/O, no waiting): they run
	// on the connection's reading goroutine, without a hand-off.
	Quick bool
	// Upgrades marks the methods whose handler may return an *rpc.Upgrade
	// (attach): the connection reads no frame past them while they decide.
	Upgrades bool
	// Lasts says whether calls are long: a stream, a follow or a wait that
	// ends when its client or its own deadline says, not when the daemon's
	// work is done. A stop cancels long calls at once with shutting_down
	// instead of giving them the grace period, and an upgrade they return
	// ends with the stop too.
	Lasts Lasts
	// Stream marks a long call whose answer only closes a stream (a log
	// follow): cut by a stop, it answers shutting_down even when its
	// handler returns a result.
	Stream bool
	Handle HandlerFunc
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
