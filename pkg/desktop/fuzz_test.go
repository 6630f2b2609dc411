package desktop

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParseSize: any text is a size in range or ErrInvalid, never a panic,
// and a size it accepts prints back as itself.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1280x800", "320x320", "7680x7680", "319x800", "x", "", "1e3x800", "-1x-1", "１２８０x800", "1280X800", "99999999999999999999x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, h, err := ParseSize(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseSize(%q): %v is not ErrInvalid", s, err)
			}
			return
		}
		if w < MinSide || w > MaxSide || h < MinSide || h > MaxSide {
			t.Fatalf("ParseSize(%q) = %dx%d, out of range", s, w, h)
		}
		if !strings.Contains(s, "x") {
			t.Fatalf("ParseSize(%q) accepted a size without x", s)
		}
	})
}

// FuzzReadCookie: whatever a cookie file holds, reading it fails or gives
// 16 bytes; never a panic.
func FuzzReadCookie(f *testing.F) {
	f.Add(authorityEntry(make([]byte, 16)))
	f.Add([]byte{0xff, 0xff, 0, 0, 0, 0, 0, 18})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := t.TempDir() + "/a"
		if err := writeFile(p, b); err != nil {
			t.Skip()
		}
		c, err := readCookie(p)
		if err == nil && len(c) != 16 {
			t.Fatalf("cookie of %d bytes", len(c))
		}
	})
}

func writeFile(p string, b []byte) error {
	return os.WriteFile(p, b, 0o600)
}
