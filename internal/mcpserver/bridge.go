package mcpserver

// The channel bridge (`agentctl channel mcp`): Claude Code starts it as a
// stdio MCP server inside a session agentd spawned. It declares Claude
// Code's channel capability ({"claude/channel": {}} among the experimental
// capabilities), registers a channel bound to the session once the MCP
// client is ready, and turns every channel message into a
// notifications/claude/channel event with params {content, meta}; it
// acknowledges each message once the event is written. Its reply tool
// answers an ask that came through the channel. When agentd restarts it
// registers the channel again.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/pkg/wire"
)

// claudeChannelMethod is the notification Claude Code's channels read.
const claudeChannelMethod = "notifications/claude/channel"

// claudeChannelCapability is the experimental capability that marks an MCP
// server as a Claude Code channel.
const claudeChannelCapability = "claude/channel"

// bridgeInstructions tell Claude what the channel's events are.
const bridgeInstructions = `Messages from agentd, the local agent-session daemon, arrive as <channel source="agentd" ...> events. ` +
	`An event whose meta has ask_id is a question someone asked this session with "agentctl ask": answer it by calling the reply tool ` +
	`with that ask_id and your complete answer as text; the asker waits for exactly that reply. Other events are information pushed by local services.`

// bridgeRetryMax bounds the wait between attempts to reach agentd.
const bridgeRetryMax = 5 * time.Second

// replyInput is the reply tool's input.
type replyInput struct {
	AskID string `json:"ask_id" mcp:"minLength=1" jsonschema:"the ask_id from the channel event's meta, e.g. ask-1a2b3c"`
	Text  string `json:"text" mcp:"maxLength=65536" jsonschema:"your complete answer, as plain text (at most 64 KiB)"`
}

// bridge is one running `agentctl channel mcp`.
type bridge struct {
	socket, session, id string
	stderr              io.Writer

	connMu sync.Mutex
	conn   mcp.Connection // the MCP connection, for notifications the SDK has no helper for

	mu     sync.Mutex
	client *wire.Client // agentd, while connected
}

func (b *bridge) logf(format string, args ...any) {
	fmt.Fprintf(b.stderr, "agentctl channel mcp: "+format+"\n", args...)
}

// BridgeConfig is what one `agentctl channel mcp` runs with.
type BridgeConfig struct {
	Socket  string // agentd's socket
	Session string // the session to bind the channel to; required
	ID      string // the channel id; empty lets agentd make one
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
}

// RunBridge serves the channel bridge on cfg's stdin and stdout until the
// MCP client goes away (stdin closes) or ctx ends.
func RunBridge(ctx context.Context, cfg BridgeConfig) error {
	if cfg.Session == "" {
		return errors.New("no session to bind: run it inside a session agentd started (it sets AGENTD_SESSION), or give --session")
	}
	b := &bridge{socket: cfg.Socket, session: cfg.Session, id: cfg.ID, stderr: cfg.Stderr}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	initialized := make(chan struct{})
	var once sync.Once
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentd", Version: buildinfo.Version}, &mcp.ServerOptions{
		Instructions: bridgeInstructions,
		Capabilities: &mcp.ServerCapabilities{
			Experimental: map[string]any{claudeChannelCapability: map[string]any{}},
			Tools:        &mcp.ToolCapabilities{},
		},
	})
	// The client is ready for events after its first message other than
	// initialize: notifications/initialized in the handshake of protocol
	// versions up to 2025-11-25, server/discover or a call in later ones.
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "initialize" {
				once.Do(func() { close(initialized) })
			}
			return next(ctx, method, req)
		}
	})
	err := addTools(srv, []tool{typedTool(tool{
		name: "reply", out: reflect.TypeFor[wire.ChannelReplyResult](),
		desc: "Answer a question that reached you through the agentd channel: give the event's ask_id (from its meta) and your complete answer as text. " +
			"The asker waits for exactly this reply; an ask can be answered once.",
	}, b.reply)}, 0)
	if err != nil {
		return err
	}

	tr := &lineTransport{r: cfg.Stdin, w: cfg.Stdout, onConn: func(c *lineConn) {
		b.connMu.Lock()
		b.conn = c
		b.connMu.Unlock()
	}}
	ss, err := srv.Connect(ctx, tr, nil)
	if err != nil {
		return fmt.Errorf("start the MCP server: %w", err)
	}
	daemonDone := make(chan struct{})
	go func() {
		defer close(daemonDone)
		select {
		case <-initialized:
		case <-ctx.Done():
			return
		}
		b.serveDaemon(ctx)
	}()
	serve(ctx, ss) // until the MCP client goes away: the bridge's work is over
	cancel()
	<-daemonDone
	return nil
}

// serveDaemon keeps a channel registered with agentd until ctx ends,
// connecting again after agentd restarts.
func (b *bridge) serveDaemon(ctx context.Context) {
	var backoff time.Duration
	var lastErr string
	for ctx.Err() == nil {
		if backoff > 0 {
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), bridgeRetryMax)
		registered, err := b.serveOnce(ctx)
		if registered {
			backoff, lastErr = 0, ""
		}
		// Say each problem once, not at every retry.
		if err != nil && ctx.Err() == nil && err.Error() != lastErr {
			lastErr = err.Error()
			b.logf("%v; retrying until it works", err)
		}
	}
}

// serveOnce connects, registers and forwards messages until the
// connection ends; it reports whether the channel was registered, or why not.
func (b *bridge) serveOnce(ctx context.Context) (bool, error) {
	ack := wire.NewChannelAcker()
	c, err := wire.Dial(ctx, b.socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
		if n.Method != wire.NotifyChannelMessage {
			return
		}
		var m wire.ChannelMessage
		if err := json.Unmarshal(n.Params, &m); err != nil {
			b.logf("unreadable channel message: %v", err)
			return
		}
		if err := b.forward(ctx, m); err != nil {
			b.logf("message %d not passed to Claude Code: %v", m.Seq, err)
			return
		}
		ack.Saw(m.Seq)
	}})
	if err != nil {
		return false, err
	}
	defer c.Close()
	r, err := c.RegisterChannel(ctx, wire.RegisterChannelParams{ChannelID: b.id, Session: b.session,
		Description: "Claude Code bridge (agentctl channel mcp)"})
	if err != nil {
		return false, fmt.Errorf("register a channel for session %s: %w", b.session, err)
	}
	ack.Bind(c, r.ChannelID)
	b.mu.Lock()
	b.client = c
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.client = nil
		b.mu.Unlock()
	}()
	b.logf("channel %s registered for session %s", r.ChannelID, r.Session)
	go ack.Run(ctx)
	select {
	case <-c.Done():
		b.logf("agentd closed the connection; registering again")
	case <-ctx.Done():
	}
	return true, nil
}

// forward writes one channel message to Claude Code as a channel event.
func (b *bridge) forward(ctx context.Context, m wire.ChannelMessage) error {
	params, err := json.Marshal(channelEvent(m))
	if err != nil {
		return err
	}
	b.connMu.Lock()
	conn := b.conn
	b.connMu.Unlock()
	if conn == nil {
		return errors.New("the MCP connection is not up")
	}
	return conn.Write(ctx, &jsonrpc.Request{Method: claudeChannelMethod, Params: params})
}

// claudeChannelParams are the params of notifications/claude/channel.
type claudeChannelParams struct {
	Content string            `json:"content"`
	Meta    map[string]string `json:"meta"`
}

// channelEvent turns a channel message into Claude Code's event: a JSON
// string message is the content as it is, an ask is its text, anything
// else is its JSON text. Meta holds only keys of letters, digits and
// underscores, which is what Claude Code keeps.
func channelEvent(m wire.ChannelMessage) claudeChannelParams {
	meta := map[string]string{
		"channel_id": m.ChannelID,
		"seq":        strconv.FormatUint(m.Seq, 10),
		"from_pid":   strconv.Itoa(m.From.PID),
		"from_uid":   strconv.Itoa(m.From.UID),
	}
	if m.From.Exe != "" {
		meta["from_exe"] = m.From.Exe
	}
	if !m.SentAt.IsZero() {
		meta["sent_at"] = m.SentAt.UTC().Format(time.RFC3339Nano)
	}
	content := string(m.Message)
	var s string
	var ask wire.ChannelAsk
	switch {
	case json.Unmarshal(m.Message, &s) == nil:
		content = s
	case json.Unmarshal(m.Message, &ask) == nil && ask.Kind == wire.ChannelAskKind && ask.AskID != "":
		content = ask.Text
		meta["kind"] = ask.Kind
		meta["ask_id"] = ask.AskID
	}
	return claudeChannelParams{Content: content, Meta: sanitizeMeta(meta)}
}

// sanitizeMeta keeps Claude Code's meta keys to [A-Za-z0-9_]: other
// characters become underscores and keys left empty are dropped.
func sanitizeMeta(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		kb := []byte(k)
		for i, c := range kb {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
				kb[i] = '_'
			}
		}
		if len(kb) > 0 {
			out[string(kb)] = v
		}
	}
	return out
}

// reply is the reply tool: it answers an ask through agentd.
func (b *bridge) reply(ctx context.Context, in replyInput) *mcp.CallToolResult {
	b.mu.Lock()
	c := b.client
	b.mu.Unlock()
	if c == nil {
		var err error
		if c, err = wire.Dial(ctx, b.socket, wire.ClientOptions{}); err != nil {
			return failure(err)
		}
		defer c.Close()
	}
	r, err := c.ReplyChannel(ctx, wire.ChannelReplyParams{AskID: in.AskID, Text: in.Text})
	if err != nil {
		return failure(err)
	}
	return answer(r, "replied to "+r.AskID)
}
