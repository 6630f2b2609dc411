package capture

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/BurntSushi/xgb/xproto"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// startXterm runs `cat > file` in an xterm titled title and waits for its
// window.
func startXterm(t testing.TB, srv *xvfbtest.Server, s *Screen, title, file string) <-chan struct{} {
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

// layoutScreen starts an X server with the keyboard layout set (setxkbmap)
// and a Screen on it that acts, once the Screen sees the layout.
func layoutScreen(t *testing.T, layout string) (*xvfbtest.Server, *Screen) {
	t.Helper()
	srv := startX(t)
	if out, err := srv.Command("setxkbmap", "-display", srv.Display, layout).CombinedOutput(); err != nil {
		t.Fatalf("setxkbmap %s: %v %s", layout, err, out)
	}
	s := newScreen(t, srv, true)
	await(t, 10*time.Second, "keyboard layout "+layout, func() bool {
		return s.Info(ctxT(t)).KeyboardLayout == layout
	})
	return srv, s
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
			srv, s := layoutScreen(t, layout)
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
	for _, r := range []rune{'😀', '你', '∀'} { // in none of the layouts tested
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

// manyDistinct returns n distinct characters that no layout has all of:
// CJK, Cyrillic, Greek, Latin-1, arrows, maths and emoji, mixed so that
// every chunk of bindings holds several scripts, in lines of 60.
func manyDistinct(n int) string {
	ranges := [][2]rune{{0x4e00, 0x4fff}, {0x410, 0x44f}, {0x391, 0x3a9}, {0x3b1, 0x3c9},
		{0xc0, 0xff}, {0x2190, 0x21ff}, {0x2200, 0x22ff}, {0x1f600, 0x1f64f}}
	var pools [][]rune
	for _, rg := range ranges {
		var p []rune
		for r := rg[0]; r <= rg[1]; r++ {
			if r != 0x3a2 && r != 0xd7 && r != 0xf7 { // unassigned Greek, and × ÷ which some layouts have
				p = append(p, r)
			}
		}
		pools = append(pools, p)
	}
	var b strings.Builder
	for i := 0; i < n; {
		for k := range pools {
			if i == n || len(pools[k]) == 0 {
				continue
			}
			b.WriteRune(pools[k][0])
			pools[k] = pools[k][1:]
			i++
			if i%60 == 0 {
				b.WriteByte('\n')
			}
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// cpuHogs keeps n processes spinning for the rest of the test: typing must
// be exact on a busy machine, where the terminal falls behind the keys.
func cpuHogs(t *testing.T, n int) {
	for range n {
		hog := exec.Command("sh", "-c", "while :; do :; done")
		if err := hog.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { hog.Process.Kill(); hog.Wait() })
	}
}

// TestTypeManyDistinct types 900 distinct characters, several times more
// than there are keycodes to borrow, so bindings are recycled within one
// type action, under four layouts while two CPU hogs run.
func TestTypeManyDistinct(t *testing.T) {
	t.Parallel()
	text := manyDistinct(900)
	if n := len([]rune(text)); n < 900 {
		t.Fatalf("only %d characters", n)
	}
	cpuHogs(t, 2)
	for _, layout := range []string{"us", "de", "fr", "ru"} {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			srv, s := layoutScreen(t, layout)
			file := filepath.Join(t.TempDir(), "typed.txt")
			cmd := startXterm(t, srv, s, "many", file)
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
				t.Errorf("typed text differs under %s: %s", layout, firstDifference(string(got), text))
			}
			t.Logf("typed %d characters in %v", len([]rune(text)), res.Duration)
			assertKeymapRestored(t, s)
		})
	}
}

// firstDifference describes where got first departs from want.
func firstDifference(got, want string) string {
	g, w := []rune(got), []rune(want)
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	excerpt := func(r []rune) string { return string(r[i:min(len(r), i+20)]) }
	return fmt.Sprintf("%d of %d characters right, then got %q, want %q", i, len(w), excerpt(g), excerpt(w))
}

// TestKeyShift presses shift with letters under four layouts and checks
// each against xdotool pressing the same keysym in the same terminal where
// xdotool is right (the layout has the key), and against the upper case
// where the layout lacks the letter (xdotool then loses the shift).
func TestKeyShift(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("xdotool"); err != nil {
		t.Skip("xdotool is not installed (apt-get install xdotool)")
	}
	letters := []rune("qazmjäöüéçйжэщωλ")
	for _, layout := range []string{"us", "de", "fr", "ru"} {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			srv, s := layoutScreen(t, layout)
			file := filepath.Join(t.TempDir(), "typed.txt")
			cmd := startXterm(t, srv, s, "shift", file)
			actions := []RawAction{{Kind: "focus", Application: "shift"}}
			var xdo []string
			for _, r := range letters {
				actions = append(actions, RawAction{Kind: "key", Key: "shift+" + string(r)})
				ks, _ := runeKeysym(r)
				for legacy, lr := range legacyKeysymRunes {
					if lr == r {
						ks = legacy // the name a layout binds it under
					}
				}
				// One line per key: xdotool loses keys it has to borrow a
				// keycode for, and a lost key must not shift the others.
				xdo = append(xdo, fmt.Sprintf("shift+0x%x", ks), "Return")
			}
			actions = append(actions, RawAction{Kind: "key", Key: "enter"})
			if res, err := s.Act(ctxT(t), ActRequest{Actions: actions, Observe: ptr(false)}); err != nil {
				t.Fatalf("act: %v (ran %d)", err, res.ActionsRun)
			}
			if out, err := srv.Command("xdotool", append(append([]string{"key", "--delay", "20"}, xdo...), "Return")...).CombinedOutput(); err != nil {
				t.Fatalf("xdotool: %v %s", err, out)
			}
			// The end of input goes through us, not xdotool: under a layout
			// without d, xdotool borrows a keycode for it and, on a loaded
			// machine, loses it (as it may lose the oracle's own keys).
			if res, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "key", Key: "ctrl+d"}}, Observe: ptr(false)}); err != nil {
				t.Fatalf("act ctrl+d: %v (ran %d)", err, res.ActionsRun)
			}
			waitExit(t, cmd, 20*time.Second)
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(got), "\n")
			ours := []rune(lines[0])
			if len(ours) != len(letters) {
				t.Fatalf("ours %q: want one character per key", lines[0])
			}
			// The oracle is the server's keymap as xmodmap prints it: shift
			// on the key whose first level is the letter gives its second
			// level; a letter no key has gets its upper case. xdotool is a
			// second opinion where its own run came out whole (under load it
			// loses keys, Returns included).
			shifted := shiftedByKeymap(t, srv)
			xdoWhole := len(lines) >= 1+len(letters)
			for i := range letters {
				xdoWhole = xdoWhole && len([]rune(lines[1+i])) == 1
			}
			for i, r := range letters {
				want, ok := shifted[r]
				if !ok {
					want = unicode.ToUpper(r)
				}
				if ours[i] != want {
					t.Errorf("shift+%c under %s typed %q, want %q (the keymap's shifted level)", r, layout, ours[i], want)
				}
				if xdoWhole {
					if theirs := []rune(lines[1+i])[0]; theirs != r && theirs != ours[i] {
						t.Errorf("shift+%c under %s typed %q, xdotool %q", r, layout, ours[i], theirs)
					}
				}
			}
			if !xdoWhole {
				t.Logf("xdotool's run lost keys (%q); compared with the keymap only", strings.Join(lines[1:], "|"))
			}
			t.Logf("%s: ours %s, xdotool %s", layout, lines[0], strings.Join(lines[1:], ""))
		})
	}
}

// TestTypeWithLocks types and presses keys with Caps Lock and Num Lock on:
// what arrives is what was asked for, and both locks are still on after.
func TestTypeWithLocks(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("xdotool"); err != nil {
		t.Skip("xdotool is not installed (apt-get install xdotool)")
	}
	srv := startX(t)
	s := newScreen(t, srv, true)
	x, err := s.conn()
	if err != nil {
		t.Fatal(err)
	}
	locks := func() uint16 {
		_, mask, err := x.pointer()
		if err != nil {
			t.Fatal(err)
		}
		return mask & (xproto.ModMaskLock | xproto.ModMask2)
	}
	if out, err := srv.Command("xdotool", "key", "Caps_Lock", "Num_Lock").CombinedOutput(); err != nil {
		t.Fatalf("xdotool: %v %s", err, out)
	}
	await(t, 10*time.Second, "Caps Lock and Num Lock on", func() bool { return locks() == xproto.ModMaskLock|xproto.ModMask2 })
	file := filepath.Join(t.TempDir(), "typed.txt")
	cmd := startXterm(t, srv, s, "locks", file)
	text := "Hello World 123 +-*/ äÖ Привет\n"
	res, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{
		{Kind: "focus", Application: "locks"},
		{Kind: "type", Text: &text},
		{Kind: "key", Key: "shift+a"},
		{Kind: "key", Key: "b"},
		{Kind: "key", Key: "enter"},
	}, Observe: ptr(false)})
	if err != nil {
		t.Fatalf("act: %v (ran %d)", err, res.ActionsRun)
	}
	if got := locks(); got != xproto.ModMaskLock|xproto.ModMask2 {
		t.Errorf("lock mask %#x after the batch, want Caps Lock and Num Lock still on", got)
	}
	if out, err := srv.Command("xdotool", "key", "Caps_Lock", "ctrl+d").CombinedOutput(); err != nil {
		t.Fatalf("xdotool: %v %s", err, out)
	}
	waitExit(t, cmd, 20*time.Second)
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := text + "Ab\n"; string(got) != want {
		t.Errorf("typed %q with the locks on, want %q", got, want)
	}
}

// shiftedByKeymap reads the X server's keymap with xmodmap -pk: for every
// key, the character of its first level and that of its second.
func shiftedByKeymap(t *testing.T, srv *xvfbtest.Server) map[rune]rune {
	t.Helper()
	out, err := srv.Command("xmodmap", "-pk").Output()
	if err != nil {
		t.Skipf("xmodmap -pk: %v (apt-get install x11-xserver-utils)", err)
	}
	m := map[rune]rune{}
	for _, line := range strings.Split(string(out), "\n") {
		var syms []uint32
		for _, f := range strings.Fields(line) {
			if v, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 32); err == nil && strings.HasPrefix(f, "0x") {
				syms = append(syms, uint32(v))
			}
		}
		if len(syms) < 2 {
			continue
		}
		lower, upper := keysymRune(syms[0]), keysymRune(syms[1])
		if lower != 0 && upper != 0 {
			if _, seen := m[lower]; !seen {
				m[lower] = upper
			}
		}
	}
	return m
}
