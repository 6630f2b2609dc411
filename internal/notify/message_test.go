package notify

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/godbus/dbus/v5"
)

func TestBadNotificationsAreRefusedNamingTheProblem(t *testing.T) {
	t.Parallel()
	many := make([]Action, MaxActions+1)
	for i := range many {
		many[i] = Action{Key: string(rune('a' + i)), Label: "x"}
	}
	for _, tc := range []struct {
		name string
		n    Notification
		want string
	}{
		{"empty summary", Notification{}, "summary is empty"},
		{"blank summary", Notification{Summary: " \t\x00"}, "summary is empty"},
		{"urgency", Notification{Summary: "s", Urgency: 3}, "urgency 3"},
		{"too many actions", Notification{Summary: "s", Actions: many}, "9 actions, at most 8"},
		{"empty key", Notification{Summary: "s", Actions: []Action{{"", "Approve"}}}, `action 1 ("Approve") has an empty key`},
		{"repeated key", Notification{Summary: "s", Actions: []Action{{"a", "A"}, {"a", "B"}}}, `"a" is given twice`},
		{"long label", Notification{Summary: "s", Actions: []Action{{"a", strings.Repeat("x", 65)}}}, "limited to 64 bytes"},
		{"negative timeout", Notification{Summary: "s", Timeout: -2}, "out of range"},
		{"sub-millisecond timeout", Notification{Summary: "s", Timeout: time.Microsecond}, "out of range"},
		{"huge timeout", Notification{Summary: "s", Timeout: 1 << 62}, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.n.args()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("args(%+v): got %v, want ErrInvalid saying %q", tc.n, err, tc.want)
			}
		})
	}
}

func TestArgumentsOfAGoodNotification(t *testing.T) {
	t.Parallel()
	a, err := Notification{
		Summary:  "build",
		Body:     "<b>rm</b> & co",
		Actions:  []Action{{"approve", "Approve"}, {"deny", ""}},
		Urgency:  Critical,
		Replaces: 7,
		Timeout:  1500 * time.Millisecond,
	}.args()
	if err != nil {
		t.Fatal(err)
	}
	if a.app != "agentd" || a.summary != "build" || a.body != "&lt;b&gt;rm&lt;/b&gt; &amp; co" || a.replaces != 7 || a.timeout != 1500 {
		t.Errorf("args: %+v", a)
	}
	if want := []string{"approve", "Approve", "deny", "deny"}; !slices.Equal(a.actions, want) {
		t.Errorf("actions %q, want %q (an empty label shows the key)", a.actions, want)
	}
	if a.hints["urgency"] != dbus.MakeVariant(byte(2)) {
		t.Errorf("urgency hint %v, want byte 2", a.hints["urgency"])
	}
	for _, tc := range []struct {
		timeout time.Duration
		want    int32
	}{{0, -1}, {NeverExpire, 0}, {time.Millisecond, 1}, {10 * time.Second, 10000}} {
		a, err := Notification{Summary: "s", Timeout: tc.timeout}.args()
		if err != nil || a.timeout != tc.want {
			t.Errorf("Timeout %v: expire_timeout %d (%v), want %d", tc.timeout, a.timeout, err, tc.want)
		}
	}
}

func TestEscapeBody(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                       "",
		"plain":                  "plain",
		"a < b && c > d":         "a &lt; b &amp;&amp; c &gt; d",
		"&amp;":                  "&amp;amp;",
		`<a href="x">y</a>`:      `&lt;a href="x"&gt;y&lt;/a&gt;`,
		"\x1b[31mred\x1b[0m ünï": "\x1b[31mred\x1b[0m ünï",
	} {
		if got := EscapeBody(in); got != want {
			t.Errorf("EscapeBody(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTextIsCutAtABoundaryAndMadeValid(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", MaxSummary) // 2 bytes each
	a, err := Notification{Summary: long, Body: strings.Repeat("<", MaxBody)}.args()
	if err != nil {
		t.Fatal(err)
	}
	if len(a.summary) > MaxSummary || !utf8.ValidString(a.summary) || !strings.HasSuffix(a.summary, ellipsis) {
		t.Errorf("summary of %d bytes cut to %d bytes, valid %v: %q", len(long), len(a.summary), utf8.ValidString(a.summary), a.summary)
	}
	if len(a.body) > MaxBody || !strings.HasSuffix(a.body, "&lt;"+ellipsis) {
		t.Errorf("escaped body cut to %d bytes ending %q, want ≤ %d ending in a whole entity", len(a.body), a.body[len(a.body)-12:], MaxBody)
	}
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"abcdef", 6, "abcdef"},          // fits
		{"abcdefg", 6, "abc" + ellipsis}, // 3 bytes and 3 of the ellipsis
		{"a&amp;xyz", 6, "a" + ellipsis}, // the entity is not split
		{"abc&amp;", 6, "abc" + ellipsis},
		{"a&lt;bcdef", 8, "a&lt;" + ellipsis}, // a whole entity stays
		{"éééé", 6, "é" + ellipsis},           // not inside a character
	} {
		if got := cut(tc.in, tc.max); got != tc.want {
			t.Errorf("cut(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
	a, err = Notification{Summary: "bad \xff\xfe byte\x00s", Actions: []Action{{"k\x00", "L\xff"}}}.args()
	if err != nil {
		t.Fatal(err)
	}
	if a.summary != "bad \uFFFD bytes" || a.actions[0] != "k" || a.actions[1] != "L\uFFFD" {
		t.Errorf("invalid text: summary %q, actions %q", a.summary, a.actions)
	}
}

// TestOnlyTheServersSignalsAboutOurNotificationsAreEvents holds the
// filter that keeps another program's notifications, and a signal forged
// by another client of the bus, from becoming events.
func TestOnlyTheServersSignalsAboutOurNotificationsAreEvents(t *testing.T) {
	t.Parallel()
	conn, other := new(dbus.Conn), new(dbus.Conn) // identities only
	n := &Notifier{conn: conn, sent: map[uint32]string{5: ":1.7", 6: ""}}
	sig := func(sender, member string, body ...any) *dbus.Signal {
		return &dbus.Signal{Sender: sender, Path: objPath, Name: iface + "." + member, Body: body}
	}
	for _, tc := range []struct {
		name string
		conn *dbus.Conn
		sig  *dbus.Signal
		want Event
		ok   bool
	}{
		{"action", conn, sig(":1.7", sigAction, uint32(5), "approve"), Event{Kind: ActionInvoked, ID: 5, ActionKey: "approve"}, true},
		{"forged by another client", conn, sig(":1.9", sigAction, uint32(5), "approve"), Event{}, false},
		{"another program's notification", conn, sig(":1.7", sigAction, uint32(4), "approve"), Event{}, false},
		{"of a lost connection", other, sig(":1.7", sigAction, uint32(5), "approve"), Event{}, false},
		{"wrong path", conn, &dbus.Signal{Sender: ":1.7", Path: "/x", Name: iface + "." + sigAction, Body: []any{uint32(5), "a"}}, Event{}, false},
		{"wrong types", conn, sig(":1.7", sigAction, "5", "approve"), Event{}, false},
		{"short body", conn, sig(":1.7", sigClosed, uint32(5)), Event{}, false},
		{"other member", conn, sig(":1.7", "ActivationToken", uint32(5), "tok"), Event{}, false},
		{"server started by activation (owner unknown)", conn, sig(":1.3", sigAction, uint32(6), "deny"), Event{Kind: ActionInvoked, ID: 6, ActionKey: "deny"}, true},
		{"closed", conn, sig(":1.7", sigClosed, uint32(5), uint32(2)), Event{Kind: Closed, ID: 5, Reason: Dismissed}, true},
		{"after closed", conn, sig(":1.7", sigAction, uint32(5), "approve"), Event{}, false},
	} {
		got, ok := n.event(tc.conn, tc.sig)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
