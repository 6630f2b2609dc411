package capture

import (
	"bytes"
	"errors"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// recordedScreen is a Screen on its own Xvfb that keeps observations.
func recordedScreen(t *testing.T, max int64) (*Screen, string) {
	t.Helper()
	srv := startX(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := New(Options{Display: srv.Display, AllowAct: true, AuditPath: audit, RecordScreen: true, RecordScreenMaxBytes: max})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, audit
}

func TestScreenRecord(t *testing.T) {
	t.Parallel()
	s, audit := recordedScreen(t, 0)
	start := time.Now()
	batches := [][]RawAction{
		{{Kind: "move", X: ptr(100.0), Y: ptr(100.0)}},
		{{Kind: "click", X: ptr(200.0), Y: ptr(150.0)}, {Kind: "key", Key: "ctrl+a"}},
		{{Kind: "wait", MS: ptr(10.0)}},
	}
	for i, actions := range batches {
		req := ActRequest{Actions: actions, CallerKey: "agent-1"}
		if i == 2 {
			req.Observe = ptr(false)
		}
		if _, err := s.Act(ctxT(t), req); err != nil {
			t.Fatalf("batch %d: %v", i+1, err)
		}
	}
	// Unchanged observations still show their image.
	if res, err := s.Act(ctxT(t), ActRequest{Actions: batches[2], CallerKey: "agent-1"}); err != nil || res.Observation == nil || !res.Observation.Unchanged {
		t.Fatalf("fourth batch: %+v %v, want an unchanged observation", res, err)
	}
	dir := filepath.Join(t.TempDir(), "record")
	res, err := s.WriteRecord(RecordRequest{Dir: dir, Since: start})
	if err != nil {
		t.Fatal(err)
	}
	if res.Batches != 4 || res.Images != 3 {
		t.Errorf("record of %d batches with %d images, want 4 with 3 (the third was not observed)", res.Batches, res.Images)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(string(raw)) // what the browser shows
	for _, want := range []string{`<img src="0001.png"`, `<img src="0002.png"`, `<img src="0004.png"`, "no observation",
		"move at 100,100", "click at 200,150 left button", "key ctrl+a", `href="#b2"`, "4 batches"} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	for _, name := range []string{"0001.png", "0002.png", "0004.png"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s is not a PNG: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "0003.png")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an image for the unobserved batch: %v", err)
	}

	t.Run("a browser shows it", func(t *testing.T) { browserShows(t, filepath.Join(dir, "index.html")) })

	// Bad input.
	for _, c := range []struct {
		name string
		req  RecordRequest
		want string
	}{
		{"existing directory", RecordRequest{Dir: dir}, "not empty"},
		{"relative directory", RecordRequest{Dir: "record"}, "absolute"},
		{"since after until", RecordRequest{Dir: filepath.Join(t.TempDir(), "r"), Since: time.Now(), Until: start}, "after until"},
		{"a file", RecordRequest{Dir: audit}, "not a directory"},
	} {
		if _, err := s.WriteRecord(c.req); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", c.name, err, c.want)
		}
	}
	if _, err := s.WriteRecord(RecordRequest{Dir: dir, Overwrite: true, Since: start}); err != nil {
		t.Errorf("overwrite: %v", err)
	}
	// A period without batches is a valid, empty page.
	empty := filepath.Join(t.TempDir(), "empty")
	res, err = s.WriteRecord(RecordRequest{Dir: empty, Until: start.Add(-time.Hour)})
	if err != nil || res.Batches != 0 {
		t.Fatalf("empty record: %+v %v", res, err)
	}
	if page, _ := os.ReadFile(filepath.Join(empty, "index.html")); !strings.Contains(string(page), "No batches") {
		t.Errorf("empty record page: %s", page)
	}
}

// TestScreenRecordCap keeps the images under a cap that holds about one,
// dropping the oldest, and the record says which were dropped.
func TestScreenRecordCap(t *testing.T) {
	t.Parallel()
	s, audit := recordedScreen(t, 1)
	for i := range 3 {
		// A new caller key each time, so every observation is encoded.
		if _, err := s.Act(ctxT(t), ActRequest{Actions: []RawAction{{Kind: "move", X: ptr(float64(10 + i)), Y: ptr(10.0)}}, CallerKey: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := os.ReadDir(filepath.Join(filepath.Dir(audit), "screen"))
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 {
		t.Errorf("%d images kept under a one-byte cap, want only the newest", len(kept))
	}
	res, err := s.WriteRecord(RecordRequest{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil || res.Batches != 3 || res.Images != 1 {
		t.Fatalf("record %+v %v, want 3 batches and 1 image", res, err)
	}
	page, _ := os.ReadFile(filepath.Join(res.Dir, "index.html"))
	if strings.Count(string(page), "dropped by the record") != 2 {
		t.Errorf("the page does not say that two images were dropped:\n%s", page)
	}
}

// browserShows opens page in headless Chromium and checks that what it
// draws is not blank: the first batch's image and its actions fill the
// first screen of the page.
func browserShows(t *testing.T, page string) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	shot := filepath.Join(t.TempDir(), "page.png")
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--window-size=1280,800", "--screenshot="+shot, "file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colors := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	// The page's background, the image, its border and anti-aliased text.
	if len(colors) < 8 {
		t.Errorf("the page as Chromium draws it has %d colours; it looks blank", len(colors))
	}
}
