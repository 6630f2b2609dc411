package session

import (
	"regexp"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"w1", true}, {"a", true}, {"my-agent_2.x", true}, {strings.Repeat("a", 63), true},
		{"", false}, {"a/b", false}, {"..", false}, {".", false}, {".hidden", false}, {"a b", false},
		{"A", false}, {strings.Repeat("a", 64), false}, {strings.Repeat("a", 200), false}, {"-x", false}, {"é", false},
	} {
		err := ValidateName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q): got %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestKeyBytes(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"enter", "\r"}, {"ESC", "\x1b"}, {"tab", "\t"}, {"up", "\x1b[A"}, {"pagedown", "\x1b[6~"},
		{"backspace", "\x7f"}, {"ctrl+c", "\x03"}, {"CTRL+A", "\x01"}, {"ctrl+[", "\x1b"}, {"alt+x", "\x1bx"},
		{"alt+X", "\x1bX"}, {"alt+enter", "\x1b\r"}, {"f1", "\x1bOP"}, {"f12", "\x1b[24~"}, {"space", " "},
	} {
		b, err := KeyBytes(tc.name)
		if err != nil || string(b) != tc.want {
			t.Errorf("KeyBytes(%q): got %q, %v; want %q", tc.name, b, err, tc.want)
		}
	}
	for _, bad := range []string{"", "hyper", "ctrl+1", "ctrl+", "alt+", "f13", "ctrl+ab"} {
		if _, err := KeyBytes(bad); err == nil {
			t.Errorf("KeyBytes(%q): got no error", bad)
		}
	}
}

func TestUntilHint(t *testing.T) {
	re := regexp.MustCompile(`^>>> $`)
	if h := untilHint(re, "42\n>>> "); !strings.Contains(h, "(?m)") {
		t.Errorf("no hint for an anchored pattern: %q", h)
	}
	if h := untilHint(re, "42"); h != "" {
		t.Errorf("hint for a pattern that cannot match anyway: %q", h)
	}
}

func TestQuestion(t *testing.T) {
	if q := question("a\r\nb\n\n"); q != "a\nb\n" {
		t.Errorf("question: %q", q)
	}
}
