package capture

import (
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/xgb/shm"
	"github.com/BurntSushi/xgb/xproto"
	"github.com/BurntSushi/xgb/xtest"
	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// benchScreen starts a 1920x1080x24 Xvfb showing a busy picture.
func benchScreen(b *testing.B) (*xvfbtest.Server, *Screen) {
	b.Helper()
	srv := xvfbtest.Start(b, xvfbtest.Options{Width: 1920, Height: 1080, Depth: 24})
	newPainter(b, srv).busy(b, 1920, 1080)
	s := newScreen(b, srv, true)
	return srv, s
}

// BenchmarkMoves96 moves the pointer 96 times as four unobserved batches
// of 24, the daemon's part of test/'s BenchmarkMoves96OneConnection.
// Reported: the time and the X round trips per move (the batch's own
// included: its screen size and its last sync).
func BenchmarkMoves96(b *testing.B) {
	srv, s := benchScreen(b)
	var batches []ActRequest
	for k := range 4 {
		var acts []RawAction
		for i := range 24 {
			acts = append(acts, RawAction{Kind: "move", X: ptr(float64(100 + 10*i + k)), Y: ptr(float64(100 + 5*i))})
		}
		batches = append(batches, ActRequest{Actions: acts, Observe: ptr(false)})
	}
	b.Run("ours", func(b *testing.B) {
		x, err := s.conn()
		if err != nil {
			b.Fatal(err)
		}
		trips := x.sock.roundTrips()
		ctx := ctxT(b)
		for b.Loop() {
			for _, req := range batches {
				if _, err := s.Act(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*96), "µs/move")
		b.ReportMetric(float64(x.sock.roundTrips()-trips)/float64(b.N*96), "roundtrips/move")
	})
	// The floor: a bare xgb loop of what a move must do, a pointer query
	// (the kill switch) and the fake motion, over a connection of its own.
	b.Run("bare-xgb", func(b *testing.B) {
		x, err := dialX(srv.Display)
		if err != nil {
			b.Fatal(err)
		}
		defer x.close()
		for b.Loop() {
			for k := range 4 {
				for i := range 24 {
					if _, err := xproto.QueryPointer(x.c, x.root).Reply(); err != nil {
						b.Fatal(err)
					}
					xtest.FakeInput(x.c, evMotionNotify, 0, 0, x.root, int16(100+10*i+k), int16(100+5*i), 0)
				}
				if _, err := xproto.GetInputFocus(x.c).Reply(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*96), "µs/move")
	})
}

// BenchmarkClickBatch runs a batch of one click, unobserved, as a model's
// computer-use step sends it: a batch short enough that its own round
// trips (its screen size, the kill switch's first look, its closing sync)
// are a good part of it.
func BenchmarkClickBatch(b *testing.B) {
	_, s := benchScreen(b)
	req := ActRequest{Actions: []RawAction{{Kind: "click", X: ptr(float64(300)), Y: ptr(float64(200))}}, Observe: ptr(false)}
	ctx := ctxT(b)
	for b.Loop() {
		if _, err := s.Act(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/batch")
}

// BenchmarkCapture compares this package's raw capture with a bare xgb
// MIT-SHM GetImage loop.
func BenchmarkCapture(b *testing.B) {
	srv, s := benchScreen(b)
	b.Run("ours", func(b *testing.B) {
		x, err := s.conn()
		if err != nil {
			b.Fatal(err)
		}
		r := image.Rect(0, 0, 1920, 1080)
		for b.Loop() {
			x.enter()
			_, release, err := x.grab(r)
			if err != nil {
				b.Fatal(err)
			}
			release()
			x.leave()
		}
	})
	b.Run("bare-xgb-shm", func(b *testing.B) {
		x, err := dialX(srv.Display)
		if err != nil {
			b.Fatal(err)
		}
		defer x.close()
		c := x.c
		size := 1920 * 1080 * 4
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600)
		if err != nil {
			b.Fatal(err)
		}
		mem, _ := unix.SysvShmAttach(id, 0, 0)
		defer unix.SysvShmDetach(mem)
		seg, _ := shm.NewSegId(c)
		if err := shm.AttachChecked(c, seg, uint32(id), false).Check(); err != nil {
			b.Fatal(err)
		}
		unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		for b.Loop() {
			if _, err := shm.GetImage(c, xproto.Drawable(x.root), 0, 0, 1920, 1080, 0xffffffff, xproto.ImageFormatZPixmap, seg, 0).Reply(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func runScrot(b *testing.B, srv *xvfbtest.Server, args ...string) {
	if _, err := exec.LookPath("scrot"); err != nil {
		b.Skip("scrot is not installed")
	}
	for b.Loop() {
		if out, err := srv.Command("scrot", args...).CombinedOutput(); err != nil {
			b.Fatalf("scrot: %v %s", err, out)
		}
	}
}

// BenchmarkScreenshot compares whole screenshot requests with scrot writing
// the same screen.
func BenchmarkScreenshot(b *testing.B) {
	srv, s := benchScreen(b)
	dir := b.TempDir()
	b.Run("png", func(b *testing.B) {
		var n int
		for b.Loop() {
			shot, err := s.Screenshot(ctxT(b), ScreenshotRequest{})
			if err != nil {
				b.Fatal(err)
			}
			n = shot.Bytes
		}
		b.ReportMetric(float64(n), "bytes")
	})
	b.Run("png-to-path", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Screenshot(ctxT(b), ScreenshotRequest{Path: filepath.Join(dir, "ours.png"), Overwrite: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scrot-png", func(b *testing.B) {
		runScrot(b, srv, "-o", filepath.Join(dir, "scrot.png"))
		st, _ := os.Stat(filepath.Join(dir, "scrot.png"))
		b.ReportMetric(float64(st.Size()), "bytes")
	})
	b.Run("jpeg-q80", func(b *testing.B) {
		var n int
		for b.Loop() {
			shot, err := s.Screenshot(ctxT(b), ScreenshotRequest{Format: "jpeg", Quality: ptr(80)})
			if err != nil {
				b.Fatal(err)
			}
			n = shot.Bytes
		}
		b.ReportMetric(float64(n), "bytes")
	})
	b.Run("scrot-jpeg-q80", func(b *testing.B) {
		runScrot(b, srv, "-o", "-q", "80", filepath.Join(dir, "scrot.jpg"))
		st, _ := os.Stat(filepath.Join(dir, "scrot.jpg"))
		b.ReportMetric(float64(st.Size()), "bytes")
	})
}

// BenchmarkType compares typing 1000 ASCII characters with xdotool type at
// its default delay. TestTypeExact checks that typed text arrives intact.
func BenchmarkType(b *testing.B) {
	srv, s := benchScreen(b)
	text := strings.Repeat("The quick brown fox jumps over the lazy dog 0123456789. ", 18)[:1000]
	typeVsXdotool(b, srv, s, text)
}

// BenchmarkTypeDistinct compares typing 1000 distinct characters that no
// layout has (CJK, Cyrillic, Greek, arrows, emoji…) into xterm with xdotool
// type on the same text: every character needs a borrowed keycode, and
// ours recycles them about ten times. Run it with CPU hogs to see it under
// load; TestTypeManyDistinct checks the text arrives intact.
func BenchmarkTypeDistinct(b *testing.B) {
	srv := startX(b)
	s := newScreen(b, srv, true)
	startXterm(b, srv, s, "bench", filepath.Join(b.TempDir(), "typed.txt"))
	text := strings.ReplaceAll(manyDistinct(1000), "\n", "")
	focus := []RawAction{{Kind: "focus", Application: "bench"}}
	if _, err := s.Act(ctxT(b), ActRequest{Actions: focus, Observe: ptr(false)}); err != nil {
		b.Fatal(err)
	}
	typeVsXdotool(b, srv, s, text)
}

// typeVsXdotool runs two sub-benchmarks in one run: a type action of text,
// and xdotool type of the same text, the baseline.
func typeVsXdotool(b *testing.B, srv *xvfbtest.Server, s *Screen, text string) {
	b.Run("ours", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Act(ctxT(b), ActRequest{Actions: []RawAction{{Kind: "type", Text: &text}}, Observe: ptr(false)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("xdotool", func(b *testing.B) {
		if _, err := exec.LookPath("xdotool"); err != nil {
			b.Skip("xdotool is not installed")
		}
		for b.Loop() {
			if out, err := srv.Command("xdotool", "type", text).CombinedOutput(); err != nil {
				b.Fatalf("xdotool: %v %s", err, out)
			}
		}
	})
}
