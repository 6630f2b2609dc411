package capture

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/xgb"
	"github.com/BurntSushi/xgb/xproto"

	"github.com/agentd/agentd/internal/xvfbtest"
)

// painter draws on the root window of a test server through its own X
// connection.
type painter struct {
	c    *xgb.Conn
	root xproto.Window
	gc   xproto.Gcontext
}

func newPainter(t testing.TB, srv *xvfbtest.Server) *painter {
	t.Helper()
	// Through this package's connection: xgb's own Close can panic.
	x, err := dialX(srv.Display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.close)
	c, root := x.c, x.root
	gc, _ := xproto.NewGcontextId(c)
	if err := xproto.CreateGCChecked(c, gc, xproto.Drawable(root), 0, nil).Check(); err != nil {
		t.Fatal(err)
	}
	return &painter{c: c, root: root, gc: gc}
}

// fill paints r with an RGB color and waits until the server has done it.
func (p *painter) fill(t testing.TB, r image.Rectangle, c color.RGBA) {
	t.Helper()
	pixel := uint32(c.R)<<16 | uint32(c.G)<<8 | uint32(c.B)
	xproto.ChangeGC(p.c, p.gc, xproto.GcForeground, []uint32{pixel})
	if err := xproto.PolyFillRectangleChecked(p.c, xproto.Drawable(p.root), p.gc, []xproto.Rectangle{{
		X: int16(r.Min.X), Y: int16(r.Min.Y), Width: uint16(r.Dx()), Height: uint16(r.Dy())}}).Check(); err != nil {
		t.Fatal(err)
	}
}

// busy paints a deterministic pattern of many colored rectangles and noise,
// hard to compress like a real desktop.
func (p *painter) busy(t testing.TB, w, h int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		x, y := rng.IntN(w), rng.IntN(h)
		rw, rh := 5+rng.IntN(300), 5+rng.IntN(200)
		p.fill(t, image.Rect(x, y, x+rw, y+rh), color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255})
	}
	// Text-like speckle.
	var rects []xproto.Rectangle
	for range 20000 {
		rects = append(rects, xproto.Rectangle{X: int16(rng.IntN(w)), Y: int16(rng.IntN(h)), Width: uint16(1 + rng.IntN(3)), Height: uint16(1 + rng.IntN(8))})
	}
	xproto.ChangeGC(p.c, p.gc, xproto.GcForeground, []uint32{0x101010})
	for i := 0; i < len(rects); i += 1000 {
		xproto.PolyFillRectangle(p.c, xproto.Drawable(p.root), p.gc, rects[i:i+1000])
	}
	xproto.GetInputFocus(p.c).Reply()
}

func decodePNG(t testing.TB, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("png does not decode: %v", err)
	}
	return img
}

func rgbAt(img image.Image, x, y int) color.RGBA {
	r, g, b, _ := img.At(x, y).RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}
}

func TestScreenshotPixels(t *testing.T) {
	t.Parallel()
	srv := startX(t)
	p := newPainter(t, srv)
	red, green, blue := color.RGBA{255, 0, 0, 255}, color.RGBA{0, 200, 0, 255}, color.RGBA{10, 20, 250, 255}
	p.fill(t, image.Rect(0, 0, 1280, 800), color.RGBA{0, 0, 0, 255})
	p.fill(t, image.Rect(100, 100, 300, 200), red)
	p.fill(t, image.Rect(300, 100, 500, 200), green)
	p.fill(t, image.Rect(100, 200, 500, 300), blue)
	s := newScreen(t, srv, false)

	t.Run("png full screen round-trips exactly", func(t *testing.T) {
		shot, err := s.Screenshot(ctxT(t), ScreenshotRequest{})
		if err != nil {
			t.Fatal(err)
		}
		img := decodePNG(t, shot.Data)
		if img.Bounds().Dx() != 1280 || img.Bounds().Dy() != 800 || shot.Width != 1280 || shot.Scale != 1 {
			t.Fatalf("got %v scale %v, want 1280x800 scale 1", img.Bounds(), shot.Scale)
		}
		for _, c := range []struct {
			x, y int
			want color.RGBA
		}{{150, 150, red}, {400, 150, green}, {120, 250, blue}, {499, 299, blue}, {500, 300, color.RGBA{0, 0, 0, 255}}} {
			if got := rgbAt(img, c.x, c.y); got != c.want {
				t.Errorf("pixel %d,%d: got %v, want %v", c.x, c.y, got, c.want)
			}
		}
		if shot.FrameID == 0 || shot.CapturedAt.IsZero() || shot.Method != MethodSHM {
			t.Errorf("metadata: %+v", shot)
		}
	})
	t.Run("png busy screen round-trips byte exact", func(t *testing.T) {
		p.busy(t, 1280, 800)
		shot, err := s.Screenshot(ctxT(t), ScreenshotRequest{})
		if err != nil {
			t.Fatal(err)
		}
		img := decodePNG(t, shot.Data)
		x, _ := s.conn()
		f, release, err := x.grab(image.Rect(0, 0, 1280, 800))
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		for y := 0; y < 800; y++ {
			for xx := 0; xx < 1280; xx++ {
				o := y*f.stride + 4*xx
				want := color.RGBA{f.pix[o+2], f.pix[o+1], f.pix[o], 255}
				if got := rgbAt(img, xx, y); got != want {
					t.Fatalf("pixel %d,%d: got %v, want %v", xx, y, got, want)
				}
			}
		}
		// Restore the flat picture for the next subtests.
		p.fill(t, image.Rect(0, 0, 1280, 800), color.RGBA{0, 0, 0, 255})
		p.fill(t, image.Rect(100, 100, 300, 200), red)
		p.fill(t, image.Rect(300, 100, 500, 200), green)
		p.fill(t, image.Rect(100, 200, 500, 300), blue)
	})
	t.Run("region crops", func(t *testing.T) {
		shot, err := s.Screenshot(ctxT(t), ScreenshotRequest{Region: &Region{X: 250, Y: 150, Width: 100, Height: 100}})
		if err != nil {
			t.Fatal(err)
		}
		img := decodePNG(t, shot.Data)
		if img.Bounds().Dx() != 100 || img.Bounds().Dy() != 100 {
			t.Fatalf("got %v, want 100x100", img.Bounds())
		}
		if got := rgbAt(img, 0, 0); got != red {
			t.Errorf("top left: got %v, want red", got)
		}
		if got := rgbAt(img, 99, 0); got != green {
			t.Errorf("top right: got %v, want green", got)
		}
		if got := rgbAt(img, 0, 99); got != blue {
			t.Errorf("bottom left: got %v, want blue", got)
		}
		if shot.Area != (Region{250, 150, 100, 100}) {
			t.Errorf("area: got %+v", shot.Area)
		}
	})
	t.Run("max_width scales", func(t *testing.T) {
		shot, err := s.Screenshot(ctxT(t), ScreenshotRequest{MaxWidth: ptr(640)})
		if err != nil {
			t.Fatal(err)
		}
		img := decodePNG(t, shot.Data)
		if img.Bounds().Dx() != 640 || img.Bounds().Dy() != 400 || shot.Scale != 0.5 {
			t.Fatalf("got %v scale %v, want 640x400 scale 0.5", img.Bounds(), shot.Scale)
		}
		for _, c := range []struct {
			x, y int
			want color.RGBA
		}{{75, 75, red}, {200, 75, green}, {100, 125, blue}} {
			if got := rgbAt(img, c.x, c.y); got != c.want {
				t.Errorf("pixel %d,%d: got %v, want %v", c.x, c.y, got, c.want)
			}
		}
	})
	t.Run("jpeg decodes", func(t *testing.T) {
		shot, err := s.Screenshot(ctxT(t), ScreenshotRequest{Format: "jpeg", Quality: ptr(90)})
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(shot.Data))
		if err != nil {
			t.Fatalf("jpeg does not decode: %v", err)
		}
		if img.Bounds().Dx() != 1280 || img.Bounds().Dy() != 800 {
			t.Fatalf("got %v", img.Bounds())
		}
		got := rgbAt(img, 150, 150)
		if got.R < 230 || got.G > 30 || got.B > 30 {
			t.Errorf("pixel 150,150: got %v, want about red", got)
		}
		got = rgbAt(img, 400, 700)
		if got.R > 20 || got.G > 20 || got.B > 20 {
			t.Errorf("pixel 400,700: got %v, want about black", got)
		}
	})
	t.Run("path writes the file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "shot.png")
		shot, err := s.Screenshot(ctxT(t), ScreenshotRequest{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		if shot.Data != nil || shot.Path != path {
			t.Errorf("got data %d bytes, path %q; want no data and path %q", len(shot.Data), shot.Path, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		decodePNG(t, b)
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
			t.Errorf("mode: got %v, want 0600", st.Mode().Perm())
		}
		// The file exists now: refused without overwrite, replaced with it.
		if _, err := s.Screenshot(ctxT(t), ScreenshotRequest{Path: path}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "overwrite") {
			t.Errorf("second screenshot to %s: %v, want ErrInvalid naming overwrite", path, err)
		}
		if _, err := s.Screenshot(ctxT(t), ScreenshotRequest{Path: path, Format: "jpeg", Overwrite: true}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); len(b) < 2 || b[0] != 0xff || b[1] != 0xd8 {
			t.Errorf("overwrite left %d bytes that are not the new JPEG", len(b))
		}
	})
	t.Run("path never follows a link", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "precious.txt")
		if err := os.WriteFile(target, []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "shot.png")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		for _, overwrite := range []bool{false, true} {
			_, err := s.Screenshot(ctxT(t), ScreenshotRequest{Path: link, Overwrite: overwrite})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("screenshot to a link (overwrite %v): %v, want ErrInvalid naming the link", overwrite, err)
			}
		}
		if b, _ := os.ReadFile(target); string(b) != "keep me" {
			t.Errorf("the link's target now holds %q", b)
		}
		if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced: %v %v", st, err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		_, err := s.Screenshot(ctxT(t), ScreenshotRequest{MaxInlineBytes: 100})
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "path") || !strings.Contains(err.Error(), "max_width") {
			t.Errorf("got %v, want ErrTooLarge naming path and max_width", err)
		}
	})
	t.Run("monitor", func(t *testing.T) {
		shot, err := s.Screenshot(ctxT(t), ScreenshotRequest{Monitor: ptr(0)})
		if err != nil {
			t.Fatal(err)
		}
		if shot.Width != 1280 {
			t.Errorf("monitor 0: got width %d, want 1280", shot.Width)
		}
		_, err = s.Screenshot(ctxT(t), ScreenshotRequest{Monitor: ptr(3)})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("monitor 3: got %v, want ErrInvalid", err)
		}
	})
}

func TestPlanShotRefusals(t *testing.T) {
	screen := image.Rect(0, 0, 1280, 800)
	mons := []Monitor{{Index: 0, Width: 1280, Height: 800}}
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		req  ScreenshotRequest
		want string
	}{
		{"region outside", ScreenshotRequest{Region: &Region{X: 1200, Y: 0, Width: 100, Height: 10}}, "outside the screen"},
		{"region negative", ScreenshotRequest{Region: &Region{X: -1, Y: 0, Width: 10, Height: 10}}, "outside the screen"},
		{"region empty", ScreenshotRequest{Region: &Region{X: 0, Y: 0, Width: 0, Height: 10}}, "empty"},
		{"monitor missing", ScreenshotRequest{Monitor: ptr(1)}, "monitor 1 does not exist"},
		{"monitor negative", ScreenshotRequest{Monitor: ptr(-1)}, "does not exist"},
		{"region and monitor", ScreenshotRequest{Monitor: ptr(0), Region: &Region{Width: 1, Height: 1}}, "not both"},
		{"max_width zero", ScreenshotRequest{MaxWidth: ptr(0)}, "max_width 0"},
		{"max_width negative", ScreenshotRequest{MaxWidth: ptr(-5)}, "max_width -5"},
		{"missing directory", ScreenshotRequest{Path: dir + "/nope/x.png"}, "does not exist"},
		{"relative path", ScreenshotRequest{Path: "x.png"}, "absolute"},
		{"path is a directory", ScreenshotRequest{Path: dir}, "directory"},
		{"unknown format", ScreenshotRequest{Format: "gif"}, "unknown format"},
		{"quality 0", ScreenshotRequest{Format: "jpeg", Quality: ptr(0)}, "quality 0"},
		{"quality 101", ScreenshotRequest{Format: "jpeg", Quality: ptr(101)}, "quality 101"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := planShot(c.req, screen, mons)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want ErrInvalid containing %q", err, c.want)
			}
		})
	}
	p, err := planShot(ScreenshotRequest{MaxWidth: ptr(5000), Format: "JPG"}, screen, mons)
	if err != nil || p.outW != 1280 || p.format != FormatJPEG {
		t.Errorf("max_width above the width: got %+v, %v; want no scaling, jpeg", p, err)
	}
}

func TestEncodersRoundTrip(t *testing.T) {
	for _, size := range [][2]int{{1, 1}, {3, 2}, {17, 33}, {640, 481}, {1001, 97}} {
		w, h := size[0], size[1]
		rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
		stride := w*4 + 8
		pix := make([]byte, stride*h)
		for i := range pix {
			pix[i] = byte(rng.IntN(4) * 60)
		}
		img := decodePNG(t, encodePNG(pix, stride, w, h))
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				o := y*stride + 4*x
				if got, want := rgbAt(img, x, y), (color.RGBA{pix[o+2], pix[o+1], pix[o], 255}); got != want {
					t.Fatalf("%dx%d pixel %d,%d: got %v, want %v", w, h, x, y, got, want)
				}
			}
		}
		jb, err := encodeJPEG(pix, stride, w, h, 80)
		if err != nil {
			t.Fatal(err)
		}
		ji, err := jpeg.Decode(bytes.NewReader(jb))
		if err != nil || ji.Bounds().Dx() != w || ji.Bounds().Dy() != h {
			t.Fatalf("%dx%d jpeg: %v %v", w, h, err, ji)
		}
	}
}
