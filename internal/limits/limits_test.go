package limits

import (
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"w1", true}, {"a", true}, {"0.b_c-d", true}, {strings.Repeat("a", MaxNameLen), true},
		{"", false}, {".", false}, {"..", false}, {"-a", false}, {"A", false}, {"a/b", false},
		{strings.Repeat("a", MaxNameLen+1), false}, {"a\n", false},
	} {
		if got := ValidName(tc.name); got != tc.want {
			t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPatternBoundMatchesMaxNameLen: the pattern's repeat count and
// MaxNameLen say the same length.
func TestPatternBoundMatchesMaxNameLen(t *testing.T) {
	if !strings.Contains(NamePattern, "{0,62}") || MaxNameLen != 63 {
		t.Fatalf("NamePattern %s and MaxNameLen %d disagree", NamePattern, MaxNameLen)
	}
}
