package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/agentd/agentd/pkg/wire"
)

// channelVerbs are the `agentctl channel ...` commands: one verb whose
// first argument picks the sub-command.
func channelVerbs() []verb { return []verb{channelVerb()} }

const channelUsage = "listen [--session S] [--id ID] [--count N] | push (ID | --session S) MESSAGE|- [--ack] [--text] | list | reply ASK_ID TEXT|- | mcp [--session S]"

// channelSub is one `agentctl channel` sub-command.
type channelSub struct {
	name  string
	usage string
	run   func(ctx context.Context, e *env, args []string) (any, error)
}

func channelSubs() []channelSub {
	return []channelSub{
		{"listen", "[--session S] [--id ID] [--cc-session-id ID] [--description TEXT] [--count N]", channelListen},
		{"push", "(ID | --session S) MESSAGE|- [--ack] [--text]", channelPush},
		{"list", "", channelList},
		{"reply", "ASK_ID TEXT|-", channelReply},
		{"mcp", "[--session S] [--id ID]", channelMCP},
	}
}

func channelVerb() verb {
	return verb{
		name: "channel", args: channelUsage,
		summary:       "register a channel and print its messages (listen), push to one, list them, reply to an ask, or bridge to Claude Code (mcp)",
		serverTimeout: true,
		run: func(ctx context.Context, e *env, args []string) (any, error) {
			if len(args) == 0 {
				return nil, usagef("usage: agentctl channel %s", channelUsage)
			}
			for _, s := range channelSubs() {
				if s.name == args[0] {
					return s.run(ctx, e, args[1:])
				}
			}
			return nil, usagef("unknown channel command %q; usage: agentctl channel %s", args[0], channelUsage)
		},
		human: func(w io.Writer, r any) error {
			switch r := r.(type) {
			case *wire.PushResult:
				fmt.Fprintf(w, "delivered message %d to channel %s\n", r.Seq, r.ChannelID)
			case *wire.ChannelListResult:
				return printChannels(w, r)
			case *wire.ChannelReplyResult:
				fmt.Fprintf(w, "replied to %s (session %s)\n", r.AskID, r.Session)
			}
			return nil
		},
	}
}

// channelMessageText turns agentctl's MESSAGE argument into JSON: JSON as
// it is, anything else (or everything, with asText) as a JSON string.
func channelMessageText(arg string, asText bool) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace([]byte(arg))
	if !asText && len(trimmed) > 0 && json.Valid(trimmed) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, trimmed); err == nil {
			return buf.Bytes(), nil
		}
	}
	// Invalid UTF-8 becomes U+FFFD: the wire carries UTF-8 JSON only.
	return json.Marshal(strings.ToValidUTF8(arg, "\uFFFD"))
}

func channelPush(ctx context.Context, e *env, args []string) (any, error) {
	const usage = "channel push (ID | --session S) MESSAGE|- [--ack] [--text]"
	var p wire.PushParams
	var asText bool
	pos, after, err := verbFlags("channel push", args, func(fs *flag.FlagSet) {
		fs.StringVar(&p.Session, "session", "", "push to the channel bound to this session (name or cc_session_id)")
		fs.BoolVar(&p.Ack, "ack", false, "wait until the listener acknowledges the message")
		fs.BoolVar(&asText, "text", false, "send MESSAGE as a JSON string even when it parses as JSON")
	})
	if err != nil {
		return nil, err
	}
	pos = append(pos, after...)
	want := 2
	if p.Session != "" {
		want = 1
	}
	if len(pos) != want {
		return nil, usagef("usage: agentctl %s", usage)
	}
	if p.Session == "" {
		p.ChannelID = pos[0]
	}
	text, err := e.stdinText(pos[len(pos)-1])
	if err != nil {
		return nil, err
	}
	if p.Message, err = channelMessageText(text, asText); err != nil {
		return nil, err
	}
	p.TimeoutMS = ms(e.timeout)
	c, err := e.dial(ctx)
	if err != nil {
		return nil, err
	}
	r, err := c.PushToChannel(ctx, p)
	if err != nil {
		return nil, err
	}
	if !r.Delivered {
		// The listener went away with the message: for a script that is
		// the channel being gone, not success.
		return nil, wire.Errorf(wire.CodeChannelUnknown, "message %d to channel %s was not delivered: %s", r.Seq, r.ChannelID, r.Detail)
	}
	return r, nil
}

func channelList(ctx context.Context, e *env, args []string) (any, error) {
	pos, _, err := verbFlags("channel list", args, func(*flag.FlagSet) {})
	if err != nil {
		return nil, err
	}
	if len(pos) != 0 {
		return nil, usagef("usage: agentctl channel list")
	}
	c, err := e.dial(ctx)
	if err != nil {
		return nil, err
	}
	return c.ListChannels(ctx)
}

func printChannels(w io.Writer, r *wire.ChannelListResult) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tSESSION\tPID\tLISTENER\tQUEUE\tDELIVERED\tAGE")
	now := time.Now()
	for _, ch := range r.Channels {
		sess := ch.Session
		if sess == "" {
			sess = "-"
		}
		exe := filepath.Base(ch.Listener.Exe)
		if ch.Listener.Exe == "" {
			exe = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d/%d\t%d\t%s\n", ch.ChannelID, sess, ch.Listener.PID, exe,
			ch.QueueDepth, ch.QueueCap, ch.Delivered, ago(now.Sub(ch.RegisteredAt)))
	}
	return tw.Flush()
}

func channelReply(ctx context.Context, e *env, args []string) (any, error) {
	pos, after, err := verbFlags("channel reply", args, func(*flag.FlagSet) {})
	if err != nil {
		return nil, err
	}
	pos = append(pos, after...)
	if len(pos) != 2 {
		return nil, usagef("usage: agentctl channel reply ASK_ID TEXT|-")
	}
	text, err := e.stdinText(pos[1])
	if err != nil {
		return nil, err
	}
	c, err := e.dial(ctx)
	if err != nil {
		return nil, err
	}
	return c.ReplyChannel(ctx, wire.ChannelReplyParams{AskID: pos[0], Text: text})
}

func channelListen(ctx context.Context, e *env, args []string) (any, error) {
	var p wire.RegisterChannelParams
	var count int
	pos, _, err := verbFlags("channel listen", args, func(fs *flag.FlagSet) {
		fs.StringVar(&p.Session, "session", "", "bind the channel to this session")
		fs.StringVar(&p.ChannelID, "id", "", "the channel id (default: one is made)")
		fs.StringVar(&p.CCSessionID, "cc-session-id", "", "the agent's own session id, e.g. a Claude Code session id")
		fs.StringVar(&p.Description, "description", "", "what the channel is, for channel list")
		fs.IntVar(&count, "count", 0, "exit after this many messages (0: until interrupted)")
	})
	if err != nil {
		return nil, err
	}
	if len(pos) != 0 || count < 0 {
		return nil, usagef("usage: agentctl channel listen [--session S] [--id ID] [--count N]")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ack := wire.NewChannelAcker()
	var (
		mu      sync.Mutex
		printed int
		lastSeq uint64
		enough  = make(chan struct{})
	)
	c, err := wire.Dial(ctx, e.socket, wire.ClientOptions{OnNotification: func(n wire.Notification) {
		if n.Method != wire.NotifyChannelMessage {
			return
		}
		var m wire.ChannelMessage
		if json.Unmarshal(n.Params, &m) != nil {
			return
		}
		mu.Lock()
		if count > 0 && printed >= count {
			mu.Unlock()
			return
		}
		printed++
		lastSeq = m.Seq
		reached := count > 0 && printed == count
		mu.Unlock()
		fmt.Fprintf(e.stdout, "%s\n", bytes.TrimSpace(n.Params))
		ack.Saw(m.Seq)
		if reached {
			close(enough)
		}
	}})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	finished := make(chan struct{})
	ack.Acked = func(seq uint64) {
		mu.Lock()
		last, reached := lastSeq, count > 0 && printed >= count
		mu.Unlock()
		if reached && seq >= last {
			select {
			case <-finished:
			default:
				close(finished)
			}
		}
	}
	r, err := c.RegisterChannel(ctx, p)
	if err != nil {
		return nil, err
	}
	ack.Bind(c, r.ChannelID)
	bound := ""
	if r.Session != "" {
		bound = " bound to session " + r.Session
	}
	fmt.Fprintf(e.stderr, "listening on channel %s%s\n", r.ChannelID, bound)
	go ack.Run(ctx)
	select {
	case <-ctx.Done():
		return nil, errPrinted // interrupted: a normal end
	case <-finished:
		return nil, errPrinted
	case <-c.Done():
		select {
		case <-enough:
			return nil, errPrinted
		default:
		}
		return nil, &wire.UnreachableError{Socket: e.socket, Err: errors.New("agentd closed the connection, and with it the channel")}
	}
}

// sessionFromEnv is the session agentctl runs in, when agentd started it.
func sessionFromEnv() string { return os.Getenv("AGENTD_SESSION") }
