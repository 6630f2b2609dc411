package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/pkg/wire"
)

// channelVerb is `agentctl channel ...`: a group whose sub-commands are
// the channel methods.
func channelVerb() command {
	return group{
		use:     "channel COMMAND",
		summary: "register a channel and print its messages (listen), push to one, list them, reply to an ask, or bridge to Claude Code (mcp)",
		long: "Channels carry messages from local services to a listener, usually an agent in a session.\n" +
			"A channel lives as long as the connection that registered it.",
		subs: []command{channelListenVerb(), channelPushVerb(), channelListVerb(), channelReplyVerb(), channelMCPVerb()},
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

func channelPushVerb() command {
	var p wire.PushParams
	var asText bool
	return verb[*wire.PushResult]{
		use:     "push (ID | --session S) MESSAGE|- [--ack] [--text]",
		summary: "push a message to a channel, by its id or the session it is bound to",
		long: "Push MESSAGE to the channel ID, or to the one bound to --session. MESSAGE is JSON, or plain text\n" +
			"sent as a JSON string (--text forces a string); - reads it from stdin; at most 64 KiB.",
		example:       "  agentctl channel push svc.1 '{\"build\": \"red\"}'\n  agentctl channel push --session cc \"CI failed on main\"",
		args:          rangeArgs(1, 2),
		complete:      completeChannel,
		serverTimeout: true,
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&p.Session, "session", "", "push to the channel bound to this session (name or cc_session_id)")
			fs.BoolVar(&p.Ack, "ack", false, "wait until the listener acknowledges the message")
			fs.BoolVar(&asText, "text", false, "send MESSAGE as a JSON string even when it parses as JSON")
		},
		flagComplete: map[string]completeKind{"session": completeSession},
		run: func(ctx context.Context, e *env, args []string) (*wire.PushResult, error) {
			want := 2
			if p.Session != "" {
				want = 1
			}
			if len(args) != want {
				return nil, usagef("usage: %s; see agentctl channel push --help", usageLine(e.cmd))
			}
			if p.Session == "" {
				p.ChannelID = args[0]
			}
			text, err := e.stdinText(args[len(args)-1])
			if err != nil {
				return nil, err
			}
			if p.Message, err = channelMessageText(text, asText); err != nil {
				return nil, err
			}
			p.TimeoutMS = ms(e.timeout)
			r, err := e.client().PushToChannel(ctx, p)
			if err != nil {
				return nil, err
			}
			if p.Ack && !r.Delivered {
				// The listener went away with the message: for a script that is
				// the channel being gone, not success.
				return nil, wire.Errorf(wire.CodeChannelUnknown, "message %d to channel %s was not delivered: %s", r.Seq, r.ChannelID, r.Detail)
			}
			return r, nil
		},
		human: func(w io.Writer, x *wire.PushResult) error {
			if x.Delivered {
				fmt.Fprintf(w, "delivered message %d to channel %s\n", x.Seq, x.ChannelID)
			} else {
				// Without --ack the daemon answers once the message is queued.
				fmt.Fprintf(w, "queued message %d for channel %s\n", x.Seq, x.ChannelID)
			}
			return nil
		},
	}
}

func channelListVerb() command {
	return verb[*wire.ChannelListResult]{
		use: "list", summary: "list the channels, their listeners and queues", quick: true,
		run: func(ctx context.Context, e *env, args []string) (*wire.ChannelListResult, error) {
			return e.client().ListChannels(ctx)
		},
		human: printChannels,
	}
}

func printChannels(w io.Writer, r *wire.ChannelListResult) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tSESSION\tPID\tLISTENER\tQUEUE\tDELIVERED\tDROPPED\tAGE")
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
		queue := fmt.Sprintf("%d/%d", ch.QueueDepth, ch.QueueCap)
		if ch.DroppedAt != nil {
			// The listener was dropped for not reading; nobody holds the
			// channel now.
			queue = "dropped " + ago(now.Sub(*ch.DroppedAt)) + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%d\t%s\n", safeText(ch.ChannelID), safeText(sess), ch.Listener.PID, safeText(exe),
			queue, ch.Delivered, ch.Dropped, ago(now.Sub(ch.RegisteredAt)))
	}
	return tw.Flush()
}

func channelReplyVerb() command {
	return verb[*wire.ChannelReplyResult]{
		use: "reply ASK_ID TEXT|-", summary: "answer an ask that reached a session through its channel",
		args: exactArgs(2),
		run: func(ctx context.Context, e *env, args []string) (*wire.ChannelReplyResult, error) {
			text, err := e.stdinText(args[1])
			if err != nil {
				return nil, err
			}
			return e.client().ReplyChannel(ctx, wire.ChannelReplyParams{AskID: args[0], Text: text})
		},
		human: func(w io.Writer, x *wire.ChannelReplyResult) error {
			fmt.Fprintf(w, "replied to %s (session %s)\n", x.AskID, x.Session)
			return nil
		},
	}
}

// listenEnd is the last envelope of `channel listen --json`.
type listenEnd struct {
	ChannelID string `json:"channel_id"`
	Messages  int    `json:"messages"`
}

func channelListenVerb() command {
	var p wire.RegisterChannelParams
	var count int
	return verb[*listenEnd]{
		use:     "listen [--session S] [--id ID] [--cc-session-id ID] [--description TEXT] [--count N]",
		summary: "register a channel and print each message as a JSON line, acknowledging it",
		long: "Register a channel and print each message pushed to it as a JSON line on stdout, acknowledging\n" +
			"it once printed; the channel's id goes to stderr. With --json every line is an envelope: the\n" +
			"first of type \"listening\" (the channel), then one of type \"message\" per message, and a last of\n" +
			"type \"result\" when --count is reached, --timeout passes or it is interrupted; each is a normal\n" +
			"end (exit 0).",
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&p.Session, "session", "", "bind the channel to this session")
			fs.StringVar(&p.ChannelID, "id", "", "the channel id (default: one is made)")
			fs.StringVar(&p.CCSessionID, "cc-session-id", "", "the agent's own session id, e.g. a Claude Code session id")
			fs.StringVar(&p.Description, "description", "", "what the channel is, for channel list")
			fs.IntVar(&count, "count", 0, "exit after this many messages (0: until interrupted)")
		},
		flagComplete: map[string]completeKind{"session": completeSession},
		run: func(ctx context.Context, e *env, args []string) (*listenEnd, error) {
			if count < 0 {
				return nil, usagef("--count %d: give a number of messages, or 0 to listen until interrupted", count)
			}
			return channelListen(ctx, e, p, count)
		},
	}
}

// channelListen holds a channel until count messages (0: until
// interrupted) or the daemon goes away.
func channelListen(ctx context.Context, e *env, p wire.RegisterChannelParams, count int) (*listenEnd, error) {
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
		if e.json {
			e.emit(typeMessage, json.RawMessage(bytes.TrimSpace(n.Params)))
		} else {
			e.outMu.Lock()
			// encoding/json leaves C1 controls and bidi overrides as
			// they are: escaped for a person (safe.go).
			fmt.Fprintf(e.stdout, "%s\n", safeText(string(bytes.TrimSpace(n.Params))))
			e.outMu.Unlock()
		}
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
	if e.json {
		e.emit(typeListening, r)
	}
	go ack.Run(ctx)
	// The end of the stream: a person has seen every message; a script
	// gets the last envelope, so it can tell the end from a cut.
	done := func() (*listenEnd, error) {
		if !e.json {
			return nil, errPrinted
		}
		mu.Lock()
		defer mu.Unlock()
		return &listenEnd{ChannelID: r.ChannelID, Messages: printed}, nil
	}
	select {
	case <-ctx.Done():
		return done() // --timeout or interrupted: a normal end
	case <-finished:
		return done()
	case <-c.Done():
		select {
		case <-enough:
			return done()
		default:
		}
		return nil, &wire.UnreachableError{Socket: e.socket, Err: errors.New("agentd closed the connection, and with it the channel")}
	}
}

// sessionFromEnv is the session agentctl runs in, when agentd started it.
func sessionFromEnv() string { return os.Getenv("AGENTD_SESSION") }
