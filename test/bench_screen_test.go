package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/xvfbtest"
	"github.com/agentd/agentd/pkg/wire"
)

// benchDesktop is a 1920x1080x24 Xvfb and a daemon serving it with acting
// allowed; with busy, it shows a busy picture (a noisy plasma fractal in a
// window over the whole screen). ImageMagick's viewer takes the keyboard
// focus when the pointer crosses it, so typing benchmarks go without it.
func benchDesktop(b *testing.B, busy bool) (*xvfbtest.Server, *home) {
	b.Helper()
	for _, tool := range []string{"convert", "display", "scrot", "xdotool"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s not installed (imagemagick, scrot, xdotool)", tool)
		}
	}
	srv := xvfbtest.Start(b, xvfbtest.Options{Width: 1920, Height: 1080})
	h := newHomeTB(b)
	h.startDaemon([]string{"--allow-act", "--display", srv.Display})
	if !busy {
		return srv, h
	}
	img := filepath.Join(b.TempDir(), "busy.png")
	if out, err := exec.Command("convert", "-size", "1920x1080", "-seed", "7", "plasma:fractal",
		"-attenuate", "0.4", "+noise", "Gaussian", img).CombinedOutput(); err != nil {
		b.Fatalf("convert: %v\n%s", err, out)
	}
	disp := srv.Command("display", "-backdrop", "-geometry", "+0+0", "-borderwidth", "0", img)
	if err := disp.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { disp.Process.Kill(); disp.Wait() })
	c, err := wire.Dial(context.Background(), h.socket, wire.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	await(b, 20*time.Second, "the picture on screen", func() bool {
		// A busy screen compresses badly: wait until the PNG is large.
		r, err := c.Screenshot(context.Background(), wire.ScreenshotParams{})
		return err == nil && r.Bytes > 1<<20
	})
	return srv, h
}

// BenchmarkScreenshotVsScrot takes whole screenshot requests through the
// daemon (written to a file, as scrot does) beside scrot processes, on the
// same screen in the same run. The bars: PNG at most 1/3 of scrot's time;
// JPEG quality 80 at most scrot's.
func BenchmarkScreenshotVsScrot(b *testing.B) {
	srv, h := benchDesktop(b, true)
	c, err := wire.Dial(context.Background(), h.socket, wire.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	dir := b.TempDir()
	q := 80
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"agentd-png", func() error {
			_, err := c.Screenshot(context.Background(), wire.ScreenshotParams{Path: filepath.Join(dir, "a.png")})
			return err
		}},
		{"scrot-png", func() error { return srv.Command("scrot", "-o", filepath.Join(dir, "s.png")).Run() }},
		{"agentd-jpeg80", func() error {
			_, err := c.Screenshot(context.Background(), wire.ScreenshotParams{Format: "jpeg", Quality: &q, Path: filepath.Join(dir, "a.jpg")})
			return err
		}},
		{"scrot-jpeg80", func() error { return srv.Command("scrot", "-o", "-q", "80", filepath.Join(dir, "s.jpg")).Run() }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := tc.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMoves96 moves the pointer 96 times: as four `agentctl act`
// processes of 24 moves without observation, and as 96 `xdotool mousemove`
// processes. The bar: agentctl at most 1/50 of xdotool's time.
func BenchmarkMoves96(b *testing.B) {
	srv, h := benchDesktop(b, true)
	var batches []string
	for k := 0; k < 4; k++ {
		var acts []map[string]any
		for i := 0; i < 24; i++ {
			acts = append(acts, map[string]any{"kind": "move", "x": 100 + 10*i + k, "y": 100 + 5*i})
		}
		body, _ := json.Marshal(map[string]any{"actions": acts, "observe": false})
		batches = append(batches, string(body))
	}
	b.Run("agentctl", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, batch := range batches {
				cmd := exec.Command(bin.agentctl, "act", batch)
				cmd.Env = h.env()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("agentctl act: %v\n%s", err, out)
				}
			}
		}
	})
	b.Run("xdotool", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for m := 0; m < 96; m++ {
				if err := srv.Command("xdotool", "mousemove", fmt.Sprint(100+m), "200").Run(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkType1000 types 1000 ASCII characters into an xterm running
// `cat > FILE`: one `agentctl act` batch against `xdotool type` with its
// default delay. The bar: at least 20x faster, and the text identical.
func BenchmarkType1000(b *testing.B) {
	srv, h := benchDesktop(b, false)
	if _, err := exec.LookPath("xterm"); err != nil {
		b.Skip("xterm not installed")
	}
	var sb strings.Builder
	for sb.Len() < 1000 {
		sb.WriteString("The quick brown fox jumps over the lazy dog 0123456789 /_\\@~|{}! ")
	}
	text := sb.String()[:1000]
	typed := filepath.Join(b.TempDir(), "typed.txt")
	xt := srv.Command("xterm", "-geometry", "200x50+0+0", "-e", "sh", "-c", "cat > "+typed)
	xt.Env = append(xt.Env, "LC_ALL=C.UTF-8")
	if err := xt.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { xt.Process.Kill(); xt.Wait() }()
	ctl := func(batch any) {
		body, _ := json.Marshal(batch)
		cmd := exec.Command(bin.agentctl, "act", string(body))
		cmd.Env = h.env()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("agentctl act: %v\n%s", err, out)
		}
	}
	await(b, 10*time.Second, "the xterm to take input", func() bool {
		ctl(map[string]any{"actions": []map[string]any{{"kind": "click", "x": 300, "y": 200},
			{"kind": "type", "text": "ready\n"}}, "observe": false})
		got, _ := os.ReadFile(typed)
		return strings.Contains(string(got), "ready\n")
	})
	batch := map[string]any{"actions": []map[string]any{{"kind": "type", "text": text}}, "observe": false}
	b.Run("agentctl", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ctl(batch)
		}
		b.StopTimer()
		ctl(map[string]any{"actions": []map[string]any{{"kind": "key", "key": "enter"}}, "observe": false})
		want := strings.Repeat(text, b.N) + "\n"
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, _ := os.ReadFile(typed)
			if strings.HasSuffix(string(got), want) {
				break
			}
			if time.Now().After(deadline) {
				tail := string(got)[max(0, len(got)-len(want)-20):]
				b.Fatalf("the xterm received %d bytes ending\n%q\nwant them to end with the %d typed\n%q", len(got), tail, len(want), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	b.Run("xdotool", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := srv.Command("xdotool", "type", text).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
