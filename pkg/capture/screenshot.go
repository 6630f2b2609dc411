package capture

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"image"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultJPEGQuality is the JPEG quality when a request gives none: small
// files with text still readable.
const DefaultJPEGQuality = 80

// Image formats.
const (
	FormatPNG  = "png"
	FormatJPEG = "jpeg"
)

// ScreenshotRequest asks for a screenshot. The zero value is a PNG of the
// whole screen returned inline.
type ScreenshotRequest struct {
	// Format is "png" (default) or "jpeg" ("jpg" is accepted).
	Format string
	// Quality is the JPEG quality, 1-100; nil means DefaultJPEGQuality.
	// PNG ignores it.
	Quality *int
	// Region crops to a rectangle of the screen.
	Region *Region
	// Monitor crops to the monitor with this index (Info.Monitors).
	Monitor *int
	// MaxWidth scales the image down, keeping its aspect, when it is wider.
	MaxWidth *int
	// Path, when set, is an absolute file path: the image is written there
	// (mode 0600, through a temporary file, so readers never see half an
	// image) and Shot.Data stays nil. An existing file is refused unless
	// Overwrite; a symbolic link is always refused, never written through.
	Path      string
	Overwrite bool
	// MaxInlineBytes, when positive and Path is empty, makes the screenshot
	// fail with ErrTooLarge when the encoded image is larger.
	MaxInlineBytes int
}

// Region is a rectangle in screen pixels.
type Region struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Shot is a screenshot.
type Shot struct {
	// FrameID increases with every screenshot the Screen takes.
	FrameID uint64 `json:"frame_id"`
	Format  string `json:"format"`
	// Width and Height are the image's size in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
	// Data is the encoded image; nil when written to Path or Unchanged.
	Data []byte `json:"-"`
	Path string `json:"path,omitempty"`
	// Bytes is the encoded size.
	Bytes int `json:"bytes"`
	// Area is the captured part of the screen, in screen pixels.
	Area Region `json:"area"`
	// Scale is image pixels per screen pixel (1 unless scaled down):
	// a point in the image maps to the screen as Area.X + x/Scale.
	Scale        float64     `json:"scale"`
	CapturedAt   time.Time   `json:"captured_at"`
	Pointer      image.Point `json:"pointer"`
	ActiveWindow string      `json:"active_window"`
	// Method is MethodSHM or MethodGetImage.
	Method          string        `json:"method"`
	CaptureDuration time.Duration `json:"capture_duration"`
	EncodeDuration  time.Duration `json:"encode_duration"`
	// Unchanged marks an observation identical to the last one the same
	// caller received; it carries no image.
	Unchanged bool `json:"unchanged,omitempty"`
}

// shotPlan is a validated request.
type shotPlan struct {
	format    string
	quality   int
	area      image.Rectangle
	outW      int
	outH      int
	path      string
	overwrite bool
	maxBytes  int
}

// planShot validates a request against the screen and its monitors. Errors
// wrap ErrInvalid and say what to fix.
func planShot(req ScreenshotRequest, screen image.Rectangle, monitors []Monitor) (shotPlan, error) {
	p := shotPlan{area: screen, quality: DefaultJPEGQuality, maxBytes: req.MaxInlineBytes}
	switch strings.ToLower(req.Format) {
	case "", FormatPNG:
		p.format = FormatPNG
	case FormatJPEG, "jpg":
		p.format = FormatJPEG
	default:
		return p, invalidf("unknown format %q; use png or jpeg", req.Format)
	}
	if req.Quality != nil {
		if *req.Quality < 1 || *req.Quality > 100 {
			return p, invalidf("quality %d is outside 1 to 100; use e.g. %d", *req.Quality, DefaultJPEGQuality)
		}
		p.quality = *req.Quality
	}
	if req.Region != nil && req.Monitor != nil {
		return p, invalidf("give region or monitor, not both")
	}
	if r := req.Region; r != nil {
		if r.Width <= 0 || r.Height <= 0 {
			return p, invalidf("region %dx%d is empty; give a positive width and height", r.Width, r.Height)
		}
		rect := image.Rect(r.X, r.Y, r.X+r.Width, r.Y+r.Height)
		if r.X < 0 || r.Y < 0 || !rect.In(screen) {
			return p, invalidf("region %d,%d %dx%d is outside the screen, which is %dx%d; keep x+width <= %d and y+height <= %d",
				r.X, r.Y, r.Width, r.Height, screen.Dx(), screen.Dy(), screen.Dx(), screen.Dy())
		}
		p.area = rect
	}
	if req.Monitor != nil {
		m := *req.Monitor
		if m < 0 || m >= len(monitors) {
			return p, invalidf("monitor %d does not exist; the screen has %d monitor(s), numbered from 0", m, len(monitors))
		}
		p.area = monitors[m].Rect()
	}
	p.outW, p.outH = p.area.Dx(), p.area.Dy()
	if req.MaxWidth != nil {
		if *req.MaxWidth <= 0 {
			return p, invalidf("max_width %d must be a positive number of pixels", *req.MaxWidth)
		}
		if *req.MaxWidth < p.outW {
			p.outH = max(1, (p.outH**req.MaxWidth+p.outW/2)/p.outW)
			p.outW = *req.MaxWidth
		}
	}
	if req.Path != "" {
		if !filepath.IsAbs(req.Path) {
			return p, invalidf("path %q is relative; give an absolute path", req.Path)
		}
		dir := filepath.Dir(req.Path)
		st, err := os.Stat(dir)
		if err != nil {
			return p, invalidf("the directory of path %q does not exist; create %s first", req.Path, dir)
		}
		if !st.IsDir() {
			return p, invalidf("%s in path %q is not a directory", dir, req.Path)
		}
		if st, err := os.Lstat(req.Path); err == nil {
			switch {
			case st.Mode()&os.ModeSymlink != 0:
				return p, invalidf("path %q is a symbolic link; screenshots are never written through one, give the real path", req.Path)
			case st.IsDir():
				return p, invalidf("path %q is a directory; give a file name", req.Path)
			case !st.Mode().IsRegular():
				return p, invalidf("path %q exists and is not a regular file; give another name", req.Path)
			case !req.Overwrite:
				return p, invalidf("path %q exists; pass overwrite (agentctl screenshot --force) to replace it", req.Path)
			}
		}
		p.path, p.overwrite = req.Path, req.Overwrite
	}
	return p, nil
}

// Screenshot captures the screen (or a region or monitor), encodes it and
// returns it inline or writes it to req.Path. Errors: ErrInvalid for a bad
// request, ErrTooLarge over MaxInlineBytes, ErrUnavailable without a display.
// Screenshots never need the screen lock or consent.
func (s *Screen) Screenshot(ctx context.Context, req ScreenshotRequest) (*Shot, error) {
	x, err := s.conn()
	if err != nil {
		return nil, err
	}
	if err := x.enter(); err != nil {
		return nil, err
	}
	defer x.leave()
	shot, _, err := s.shoot(x, req, nil)
	return shot, err
}

// shoot takes a screenshot on x. When same is not nil it is called with the
// hash of the captured pixels and plan before encoding; when it returns true
// the image is not encoded and the shot is marked Unchanged.
func (s *Screen) shoot(x *xconn, req ScreenshotRequest, same func(uint64) bool) (*Shot, uint64, error) {
	screen, err := x.screenRect()
	if err != nil {
		return nil, 0, err
	}
	var mons []Monitor
	if req.Monitor != nil {
		mons = x.monitors(screen)
	}
	plan, err := planShot(req, screen, mons)
	if err != nil {
		return nil, 0, err
	}
	start := time.Now()
	f, release, err := x.grab(plan.area)
	if err != nil {
		return nil, 0, err
	}
	shot := &Shot{
		FrameID:         s.frameID.Add(1),
		Format:          plan.format,
		Width:           plan.outW,
		Height:          plan.outH,
		Area:            Region{plan.area.Min.X, plan.area.Min.Y, plan.area.Dx(), plan.area.Dy()},
		Scale:           float64(plan.outW) / float64(plan.area.Dx()),
		CapturedAt:      start,
		Method:          f.method,
		CaptureDuration: time.Since(start),
	}
	var sum uint64
	if same != nil {
		sum = frameHash(f, plan)
		if same(sum) {
			release()
			shot.Unchanged = true
			s.decorate(x, shot)
			return shot, sum, nil
		}
	}
	encStart := time.Now()
	pix, stride := f.pix, f.stride
	if plan.outW != plan.area.Dx() || plan.outH != plan.area.Dy() {
		pix = downscale(pix, stride, plan.area.Dx(), plan.area.Dy(), plan.outW, plan.outH)
		stride = plan.outW * 4
	}
	var data []byte
	if plan.format == FormatPNG {
		data = encodePNG(pix, stride, plan.outW, plan.outH)
	} else {
		data, err = encodeJPEG(pix, stride, plan.outW, plan.outH, plan.quality)
	}
	release()
	if err != nil {
		return nil, 0, err
	}
	shot.EncodeDuration = time.Since(encStart)
	shot.Bytes = len(data)
	s.decorate(x, shot)
	if plan.path != "" {
		if err := writeScreenshot(plan.path, data, plan.overwrite); err != nil {
			return nil, 0, err
		}
		shot.Path = plan.path
		return shot, sum, nil
	}
	if plan.maxBytes > 0 && len(data) > plan.maxBytes {
		return nil, 0, fmt.Errorf("%w: the %s image is %d bytes, over the %d-byte limit for inline images; pass path to write it to a file, or max_width (or jpeg) to make it smaller",
			ErrTooLarge, plan.format, len(data), plan.maxBytes)
	}
	shot.Data = data
	return shot, sum, nil
}

// decorate adds the pointer position and the active window's title.
func (s *Screen) decorate(x *xconn, shot *Shot) {
	if p, _, err := x.pointer(); err == nil {
		shot.Pointer = p
	}
	_, shot.ActiveWindow = x.activeWindow()
}

var hashSeed = maphash.MakeSeed()

// frameHash identifies the pixels and the output parameters of a capture.
func frameHash(f frame, p shotPlan) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	fmt.Fprintf(&h, "%s %d %v %dx%d\n", p.format, p.quality, p.area, p.outW, p.outH)
	w := f.rect.Dx() * 4
	for y := 0; y < f.rect.Dy(); y++ {
		h.Write(f.pix[y*f.stride : y*f.stride+w])
	}
	return h.Sum64()
}

// writeScreenshot writes data to path with mode 0600 through a temporary
// file in the same directory, so readers never see half an image. Without
// overwrite the file is linked into place, which fails if anything
// appeared at path since the request was checked; with it, rename replaces
// a file (or a link that appeared meanwhile: the link, not its target).
func writeScreenshot(path string, data []byte, overwrite bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return invalidf("cannot write %s: %v", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if overwrite {
			err = os.Rename(tmp.Name(), path)
		} else {
			err = os.Link(tmp.Name(), path)
			if errors.Is(err, fs.ErrExist) {
				return invalidf("path %q appeared while the screenshot was taken; pass overwrite to replace it", path)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("write screenshot to %s: %w", path, err)
	}
	return nil
}
