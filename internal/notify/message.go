package notify

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/godbus/dbus/v5"
)

// The bounds on what is sent (see the package doc).
const (
	// MaxSummary is the most bytes of a summary sent; a summary is one
	// line in every server's popup.
	MaxSummary = 200
	// MaxBody is the most bytes of a body sent, after escaping.
	MaxBody = 2000
	// MaxActions is the most actions a notification may carry.
	MaxActions = 8
	// maxActionText bounds an action's key and label.
	maxActionText = 64
)

// ellipsis ends a cut summary or body.
const ellipsis = "…"

// Urgency is the notification's urgency hint; servers style and time out
// notifications by it (dunst keeps critical ones until closed).
type Urgency byte

// The urgency levels of the specification.
const (
	Low      Urgency = 0
	Normal   Urgency = 1
	Critical Urgency = 2
)

// NeverExpire is the Timeout of a notification that stays until it is
// closed (by Close, the person or a replacement).
const NeverExpire time.Duration = -1

// Action is a button or menu entry of a notification: the server shows
// Label and reports Key when the person picks it. The key "default" is the
// action of a click on the notification itself.
type Action struct {
	Key, Label string
}

// Notification is what Notify shows.
type Notification struct {
	// App is the application's name ("agentd" when empty).
	App string
	// Summary is the notification's title, plain text; it must not be
	// empty.
	Summary string
	// Body is plain text; it is escaped for servers that read markup.
	Body string
	// Actions are offered in this order; keys must be distinct and
	// non-empty, and at most MaxActions.
	Actions []Action
	// Urgency is Low, Normal or Critical.
	Urgency Urgency
	// Replaces is the id of a notification this one updates in place (0:
	// a new notification). The server keeps the id.
	Replaces uint32
	// Timeout is how long the notification is shown: 0 for the server's
	// default, NeverExpire to keep it until closed, else a duration of at
	// least a millisecond.
	Timeout time.Duration
}

// notifyArgs are the arguments of org.freedesktop.Notifications.Notify,
// in order, for a checked and bounded notification.
type notifyArgs struct {
	app      string
	replaces uint32
	icon     string
	summary  string
	body     string
	actions  []string
	hints    map[string]dbus.Variant
	timeout  int32
}

// args checks n and returns the arguments that Notify sends, or an error
// wrapping ErrInvalid that names the problem.
func (n Notification) args() (notifyArgs, error) {
	summary := strings.TrimSpace(clean(n.Summary))
	if summary == "" {
		return notifyArgs{}, fmt.Errorf("%w: the summary is empty; give the notification a title", ErrInvalid)
	}
	if n.Urgency > Critical {
		return notifyArgs{}, fmt.Errorf("%w: urgency %d is not one of Low (0), Normal (1) or Critical (2)", ErrInvalid, n.Urgency)
	}
	if len(n.Actions) > MaxActions {
		return notifyArgs{}, fmt.Errorf("%w: %d actions, at most %d are allowed", ErrInvalid, len(n.Actions), MaxActions)
	}
	var timeout int32
	switch {
	case n.Timeout == 0:
		timeout = -1 // the server's default
	case n.Timeout == NeverExpire:
		timeout = 0
	case n.Timeout < time.Millisecond || n.Timeout > time.Duration(1<<31-1)*time.Millisecond:
		return notifyArgs{}, fmt.Errorf("%w: timeout %v is out of range; use 0 for the server's default, NeverExpire, or 1ms to 596h", ErrInvalid, n.Timeout)
	default:
		timeout = int32(n.Timeout / time.Millisecond)
	}
	actions := make([]string, 0, 2*len(n.Actions))
	seen := make(map[string]bool, len(n.Actions))
	for i, a := range n.Actions {
		key, label := clean(a.Key), clean(a.Label)
		if key == "" {
			return notifyArgs{}, fmt.Errorf("%w: action %d (%q) has an empty key", ErrInvalid, i+1, a.Label)
		}
		if len(key) > maxActionText || len(label) > maxActionText {
			return notifyArgs{}, fmt.Errorf("%w: action %q: key and label are limited to %d bytes", ErrInvalid, key, maxActionText)
		}
		if seen[key] {
			return notifyArgs{}, fmt.Errorf("%w: action key %q is given twice; keys must be distinct", ErrInvalid, key)
		}
		seen[key] = true
		if label == "" {
			label = key
		}
		actions = append(actions, key, label)
	}
	app := clean(n.App)
	if app == "" {
		app = "agentd"
	}
	return notifyArgs{
		app:      cut(app, maxActionText),
		replaces: n.Replaces,
		summary:  cut(summary, MaxSummary),
		body:     cut(EscapeBody(clean(n.Body)), MaxBody),
		actions:  actions,
		hints:    map[string]dbus.Variant{"urgency": dbus.MakeVariant(byte(n.Urgency))},
		timeout:  timeout,
	}, nil
}

// EscapeBody escapes the three characters that a server reading body
// markup would take for markup: &, < and >.
func EscapeBody(s string) string {
	return bodyEscaper.Replace(s)
}

var bodyEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// clean makes s a valid D-Bus string: valid UTF-8 (each bad sequence
// becomes U+FFFD) without NUL bytes.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "")
}

// cut returns s if it fits in max bytes, else its longest prefix that
// ends at a character boundary, leaves room for the ellipsis and does not
// split an escape sequence (&amp; and the like), followed by the ellipsis.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	end := max - len(ellipsis)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	// An entity is at most 5 bytes (&amp;): an '&' among the last four
	// bytes kept, with no ';' after it, begins a cut entity.
	if amp := strings.LastIndexByte(s[:end], '&'); amp >= 0 && amp >= end-4 && !strings.Contains(s[amp:end], ";") {
		end = amp
	}
	return s[:end] + ellipsis
}
