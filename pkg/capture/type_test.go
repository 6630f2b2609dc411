package capture

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// startXterm runs `cat > file` in an xterm titled title and waits for its
// window.
func startXterm(t *testing.T, srv *xvfbtest.Server, s *Screen, title, file string) <-chan struct{} {
	t.Helper()
	if _, err := exec.LookPath("xterm"); err != nil {
		t.Skip("xterm is not installed (apt-get install xterm)")
	}
	cmd := srv.Command("xterm", "-u8", "-T", title, "-geometry", "80x24+100+100", "-e", "sh", "-c", "stty -echo; exec cat > "+file)
	cmd.Env = append(cmd.Env, "LC_ALL=C.UTF-8")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	x, err := s.conn()
	if err != nil {
		t.Fatal(err)
	}
	await(t, 20*time.Second, "the xterm window", func() bool {
		_, ok, _ := x.findWindow(title)
		return ok
	})
	// The terminal has to run cat before the first key arrives.
	await(t, 20*time.Second, "cat to create "+file, func() bool {
		_, err := os.Stat(file)
		return err == nil
	})
	return done
}

func waitExit(t *testing.T, done <-chan struct{}, timeout time.Duration) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("xterm did not exit within %v after ctrl+d", timeout)
	}
}

func typingText() string {
	return "ASCII: Hello, World! /_\\@~|{}[]<>^`'\"#$%&*()+=-;:?,.\tTab\n" +
		"Umlaut: äöüß ÄÖÜ é è ê ñ ç €\n" +
		"Cyrillic: Привет, мир\n" +
		"CJK: 你好世界 日本語\n" +
		"Emoji: 😀🎉\n" +
		"End.\n"
}

func TestTypeExact(t *testing.T) {
	t.Parallel()
	for _, layout := range []string{"us", "de"} {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			srv := startX(t)
			if layout != "us" {
				if out, err := srv.Command("setxkbmap", "-display", srv.Display, layout).CombinedOutput(); err != nil {
					t.Fatalf("setxkbmap %s: %v %s", layout, err, out)
				}
			}
			s := newScreen(t, srv, true)
			await(t, 10*time.Second, "keyboard layout "+layout, func() bool {
				return s.Info(ctxT(t)).KeyboardLayout == layout
			})
			file := filepath.Join(t.TempDir(), "typed.txt")
			title := "typing-" + layout
			cmd := startXterm(t, srv, s, title, file)
			text := typingText()
			res, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{
				{Kind: "focus", Application: title},
				{Kind: "type", Text: &text},
				{Kind: "key", Key: "ctrl+d"},
			}, Observe: ptr(false)})
			if err != nil {
				t.Fatalf("act: %v (ran %d)", err, res.ActionsRun)
			}
			waitExit(t, cmd, 10*time.Second)
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("typed %d bytes in %v", len(got), res.Duration)
			if string(got) != text {
				t.Errorf("typed text differs under layout %s\n got: %q\nwant: %q", layout, got, text)
			}
			assertKeymapRestored(t, s)
		})
	}
}

// assertKeymapRestored checks that no temporary binding is left and nothing
// is held down.
func assertKeymapRestored(t *testing.T, s *Screen) {
	t.Helper()
	x, err := s.conn()
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x.loadKeyboard()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []rune{'😀', '你', 'П'} {
		if _, ok := kb.byRune[r]; ok {
			t.Errorf("keymap still binds %q after the batch", r)
		}
	}
	_, mask, err := x.pointer()
	if err != nil {
		t.Fatal(err)
	}
	if mask&0xff0d != 0 { // shift, control, mod1-5, buttons
		t.Errorf("modifier or button mask %#x still set after the batch", mask)
	}
}

func ptr[T any](v T) *T { return &v }

var _ = errors.Is
var _ = strings.Contains

// TestTypeManyDistinct types more distinct missing characters than there are
// keycodes to borrow, so bindings are recycled within one type action.
func TestTypeManyDistinct(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	s := newScreen(t, srv, true)
	file := filepath.Join(t.TempDir(), "typed.txt")
	cmd := startXterm(t, srv, s, "many", file)
	var b strings.Builder
	for i := range 300 {
		b.WriteRune(rune(0x4e00 + i*7))
		if i%60 == 59 {
			b.WriteByte('\n')
		}
	}
	text := b.String()
	res, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{
		{Kind: "focus", Application: "many"},
		{Kind: "type", Text: &text},
		{Kind: "key", Key: "ctrl+d"},
	}, Observe: ptr(false)})
	if err != nil {
		t.Fatalf("act: %v (ran %d)", err, res.ActionsRun)
	}
	waitExit(t, cmd, 20*time.Second)
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != text {
		t.Errorf("typed text differs\n got: %q\nwant: %q", got, text)
	}
	t.Logf("typed %d characters in %v", len([]rune(text)), res.Duration)
	assertKeymapRestored(t, s)
}
