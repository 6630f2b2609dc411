package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/limits"
	"github.com/agentd/agentd/pkg/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sessions as MCP resources, and their states as resource subscriptions.
// A model's client reads agentd://sessions (every session with its state)
// or agentd://sessions/NAME (one session's status: its agent's state,
// what it asks and since when) and may subscribe to either; agentd's
// state changes (agent.subscribe: working, waiting, needs_approval,
// needs_attention, and each session's spawn, exit, restart and removal)
// then reach it as notifications/resources/updated for the list and for
// that session. The subscription to agentd runs from the first
// resources/subscribe until the server ends, reconnecting with its cursor
// when agentd restarts, so no change recorded meanwhile is missed.

// The resources' addresses.
const (
	sessionsURI      = "agentd://sessions"
	sessionURIPrefix = "agentd://sessions/"
)

// stateFeed turns agentd's state changes into resource updates.
type stateFeed struct {
	t    *tools
	srv  *mcp.Server
	ctx  context.Context // the server's: the feed ends with it
	once sync.Once
	// retry is how long the feed waits before dialling agentd again.
	retry time.Duration
}

// addSessionResources adds the session resources to srv and returns the
// subscribe handler its options take.
func addSessionResources(srv *mcp.Server, f *stateFeed) {
	srv.AddResource(&mcp.Resource{URI: sessionsURI, Name: "sessions", Title: "agentd's sessions",
		Description: "Every session with its status and, for agent CLIs, its state (working, waiting, needs_approval, needs_attention). Subscribe to hear of every change.",
		MIMEType:    "application/json"}, f.readSessions)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: sessionURIPrefix + "{name}", Name: "session", Title: "one agentd session",
		Description: "One session's status: its agent's state, what it asks (a permission prompt's command and choices) and since when. Subscribe to hear when it changes.",
		MIMEType:    "application/json"}, f.readSession)
}

func jsonResource(uri string, v any) (*mcp.ReadResourceResult, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

func (f *stateFeed) readSessions(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	c, err := f.t.conn(ctx)
	if err != nil {
		return nil, err
	}
	res, err := c.List(ctx, wire.ListParams{})
	if err != nil {
		return nil, err
	}
	return jsonResource(req.Params.URI, res)
}

func (f *stateFeed) readSession(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	name, err := sessionOf(req.Params.URI)
	if err != nil {
		return nil, err
	}
	c, err := f.t.conn(ctx)
	if err != nil {
		return nil, err
	}
	st, err := c.Status(ctx, name)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	return jsonResource(req.Params.URI, st)
}

// sessionOf is the session an agentd://sessions/NAME address names.
func sessionOf(uri string) (string, error) {
	name, ok := strings.CutPrefix(uri, sessionURIPrefix)
	if !ok || !limits.ValidName(name) {
		return "", fmt.Errorf("%q is not a session's address: use %s or %sNAME (names are letters, digits, '.', '_' and '-')", uri, sessionsURI, sessionURIPrefix)
	}
	return name, nil
}

// subscribe accepts a subscription to the sessions or to one session
// (the SDK keeps who subscribed to what) and starts the feed.
func (f *stateFeed) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	if req.Params.URI != sessionsURI {
		if _, err := sessionOf(req.Params.URI); err != nil {
			return err
		}
	}
	f.once.Do(func() { go f.run() })
	return nil
}

func (f *stateFeed) unsubscribe(context.Context, *mcp.UnsubscribeRequest) error { return nil }

// run follows every session's changes until the server ends, from where
// it left off after agentd went away.
func (f *stateFeed) run() {
	var mu sync.Mutex
	var cur wire.Cursor
	p := wire.SubscribeParams{Follow: true}
	for f.ctx.Err() == nil {
		c, err := wire.Dial(f.ctx, f.t.cfg.Socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
			if n.Method != wire.NotifyStateChange {
				return
			}
			var sc wire.StateChange
			if json.Unmarshal(n.Params, &sc) != nil {
				return
			}
			mu.Lock()
			cur.Add(sc)
			mu.Unlock()
			f.updated(sc)
		}})
		if err == nil {
			// It ends when agentd stops or the server does: either
			// way, dial again (from the cursor) unless the server ended.
			c.Subscribe(f.ctx, p)
			c.Close()
		}
		mu.Lock()
		if cur.Seqs != nil || !cur.After.IsZero() {
			resume := cur
			p.Cursor = &resume
		}
		mu.Unlock()
		select {
		case <-f.ctx.Done():
		case <-time.After(f.retry):
		}
	}
}

// updated tells the subscribers of the list and of the session.
func (f *stateFeed) updated(sc wire.StateChange) {
	f.srv.ResourceUpdated(f.ctx, &mcp.ResourceUpdatedNotificationParams{URI: sessionsURI})
	f.srv.ResourceUpdated(f.ctx, &mcp.ResourceUpdatedNotificationParams{URI: sessionURIPrefix + sc.Name})
}
