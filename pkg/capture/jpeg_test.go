package capture

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// jpegTestFrame is a B, G, R, x frame for the encoder tests.
type jpegTestFrame struct {
	name      string
	pix       []byte
	stride, w int
	h         int
}

// rgba returns the frame as an image.RGBA, for image/jpeg.
func (f jpegTestFrame) rgba() *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, f.w, f.h))
	for y := range f.h {
		for x := range f.w {
			o := y*f.stride + 4*x
			img.SetRGBA(x, y, color.RGBA{f.pix[o+2], f.pix[o+1], f.pix[o], 255})
		}
	}
	return img
}

// newJPEGTestFrame makes a w×h frame with a row padding of pad bytes whose
// pixels come from fill.
func newJPEGTestFrame(name string, w, h, pad int, fill func(x, y int) (r, g, b uint8)) jpegTestFrame {
	stride := 4*w + pad
	pix := make([]byte, stride*h)
	for i := range pix {
		pix[i] = 0xa5 // padding and x bytes must not matter
	}
	for y := range h {
		for x := range w {
			r, g, b := fill(x, y)
			o := y*stride + 4*x
			pix[o], pix[o+1], pix[o+2] = b, g, r
		}
	}
	return jpegTestFrame{name, pix, stride, w, h}
}

// busyFrame is like the benchmark's busy screen: coloured rectangles under
// dark text-like speckle.
func busyFrame(w, h int, seed uint64) jpegTestFrame {
	rng := rand.New(rand.NewPCG(seed, 2))
	img := make([]uint32, w*h)
	for range 400 {
		x0, y0 := rng.IntN(w), rng.IntN(h)
		x1, y1 := min(x0+5+rng.IntN(300), w), min(y0+5+rng.IntN(200), h)
		c := rng.Uint32() & 0xffffff
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				img[y*w+x] = c
			}
		}
	}
	for range 20000 * w * h / (1920 * 1080) {
		x0, y0 := rng.IntN(w), rng.IntN(h)
		x1, y1 := min(x0+1+rng.IntN(3), w), min(y0+1+rng.IntN(8), h)
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				img[y*w+x] = 0x101010
			}
		}
	}
	return newJPEGTestFrame(fmt.Sprintf("busy%dx%d", w, h), w, h, 0, func(x, y int) (uint8, uint8, uint8) {
		c := img[y*w+x]
		return uint8(c >> 16), uint8(c >> 8), uint8(c)
	})
}

// jpegTestFrames are frames of awkward sizes and contents.
func jpegTestFrames() []jpegTestFrame {
	rng := rand.New(rand.NewPCG(7, 7))
	noise := func(int, int) (uint8, uint8, uint8) {
		return uint8(rng.Uint32()), uint8(rng.Uint32()), uint8(rng.Uint32())
	}
	gradient := func(x, y int) (uint8, uint8, uint8) {
		return uint8(x), uint8(y), uint8(x + y)
	}
	return []jpegTestFrame{
		newJPEGTestFrame("1x1", 1, 1, 0, func(int, int) (uint8, uint8, uint8) { return 200, 30, 90 }),
		newJPEGTestFrame("2x2", 2, 2, 4, gradient),
		newJPEGTestFrame("17x9", 17, 9, 12, gradient),
		newJPEGTestFrame("16x16", 16, 16, 0, gradient),
		newJPEGTestFrame("33x47-noise", 33, 47, 0, noise),
		newJPEGTestFrame("solid-black", 64, 48, 0, func(int, int) (uint8, uint8, uint8) { return 0, 0, 0 }),
		newJPEGTestFrame("solid-white", 100, 37, 8, func(int, int) (uint8, uint8, uint8) { return 255, 255, 255 }),
		newJPEGTestFrame("solid-colour", 129, 65, 0, func(int, int) (uint8, uint8, uint8) { return 12, 200, 77 }),
		newJPEGTestFrame("saturated-edges", 80, 80, 0, func(x, y int) (uint8, uint8, uint8) {
			if (x/3+y/5)%2 == 0 {
				return 255, 0, 255
			}
			return 0, 255, 0
		}),
		newJPEGTestFrame("320x240-noise", 320, 240, 0, noise),
		busyFrame(640, 480, 1),
		busyFrame(1921, 1081, 3),
	}
}

// psnr returns the peak signal-to-noise ratio of img against the frame, over
// the R, G and B samples, and over luma (BT.601) alone. 4:2:0 subsampling
// limits the first on pictures with fine colour detail (image/jpeg's output
// too); the second is what the eye and OCR mostly see.
func psnr(t testing.TB, f jpegTestFrame, img image.Image) (rgb, luma float64) {
	t.Helper()
	if img.Bounds() != image.Rect(0, 0, f.w, f.h) {
		t.Fatalf("%s: decoded bounds %v, want %dx%d", f.name, img.Bounds(), f.w, f.h)
	}
	var se, sey float64
	for y := range f.h {
		for x := range f.w {
			r, g, b, _ := img.At(x, y).RGBA()
			o := y*f.stride + 4*x
			d := [3]float64{float64(r>>8) - float64(f.pix[o+2]), float64(g>>8) - float64(f.pix[o+1]), float64(b>>8) - float64(f.pix[o])}
			se += d[0]*d[0] + d[1]*d[1] + d[2]*d[2]
			dy := 0.299*d[0] + 0.587*d[1] + 0.114*d[2]
			sey += dy * dy
		}
	}
	return toPSNR(se / float64(3*f.w*f.h)), toPSNR(sey / float64(f.w*f.h))
}

// toPSNR converts a mean squared error of 8-bit samples to a PSNR in dB.
func toPSNR(mse float64) float64 {
	if mse == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/mse)
}

// imagePSNR returns the PSNR of a against b over R, G and B.
func imagePSNR(a, b image.Image) float64 {
	var se float64
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r0, g0, b0, _ := a.At(x, y).RGBA()
			r1, g1, b1, _ := b.At(x, y).RGBA()
			for _, d := range [3]float64{float64(r0>>8) - float64(r1>>8), float64(g0>>8) - float64(g1>>8), float64(b0>>8) - float64(b1>>8)} {
				se += d * d
			}
		}
	}
	return toPSNR(se / float64(3*r.Dx()*r.Dy()))
}

// TestJPEGMatchesStdlib checks that the encoder's output decodes, at several
// qualities, to an image as close to the source as image/jpeg's own output
// at the same quality, with a similar size.
func TestJPEGMatchesStdlib(t *testing.T) {
	t.Parallel()
	for _, f := range jpegTestFrames() {
		for _, q := range []int{1, 30, 50, 80, 95, 100} {
			ours, err := encodeJPEG(f.pix, f.stride, f.w, f.h, q)
			if err != nil {
				t.Fatalf("%s q%d: %v", f.name, q, err)
			}
			img, err := jpeg.Decode(bytes.NewReader(ours))
			if err != nil {
				t.Fatalf("%s q%d: decode: %v", f.name, q, err)
			}
			var ref bytes.Buffer
			if err := jpeg.Encode(&ref, f.rgba(), &jpeg.Options{Quality: q}); err != nil {
				t.Fatal(err)
			}
			refImg, err := jpeg.Decode(bytes.NewReader(ref.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			got, gotY := psnr(t, f, img)
			want, wantY := psnr(t, f, refImg)
			vsRef := imagePSNR(img, refImg)
			t.Logf("%s q%d: %d bytes, PSNR %.2f dB (luma %.2f); image/jpeg %d bytes, %.2f dB (luma %.2f); between them %.2f dB",
				f.name, q, len(ours), got, gotY, ref.Len(), want, wantY, vsRef)
			if got < min(want-0.5, 45) || gotY < min(wantY-0.5, 45) {
				t.Errorf("%s q%d: PSNR %.2f dB (luma %.2f), image/jpeg %.2f dB (luma %.2f)", f.name, q, got, gotY, want, wantY)
			}
			if q >= 80 && vsRef < 33 {
				t.Errorf("%s q%d: %.2f dB from image/jpeg's output", f.name, q, vsRef)
			}
			if len(ours) > ref.Len()*11/10+600 {
				t.Errorf("%s q%d: %d bytes, image/jpeg %d", f.name, q, len(ours), ref.Len())
			}
		}
	}
}

// TestJPEGBusyQuality checks the busy 1080p picture at quality 80, the
// benchmark's case, against an absolute bound.
func TestJPEGBusyQuality(t *testing.T) {
	t.Parallel()
	f := busyFrame(1920, 1080, 1)
	b, err := encodeJPEG(f.pix, f.stride, f.w, f.h, 80)
	if err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if _, y := psnr(t, f, img); y < 30 {
		t.Errorf("luma PSNR %.2f dB, want > 30", y)
	}
}

// TestJPEGSolidExact checks that flat colours survive exactly at quality
// 100 apart from the colour conversion's rounding.
func TestJPEGSolidExact(t *testing.T) {
	t.Parallel()
	for _, c := range [][3]uint8{{0, 0, 0}, {255, 255, 255}, {128, 128, 128}, {255, 0, 0}, {0, 0, 255}, {12, 200, 77}} {
		f := newJPEGTestFrame("solid", 40, 24, 0, func(int, int) (uint8, uint8, uint8) { return c[0], c[1], c[2] })
		b, err := encodeJPEG(f.pix, f.stride, f.w, f.h, 100)
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for y := range f.h {
			for x := range f.w {
				r, g, bl, _ := img.At(x, y).RGBA()
				got := [3]int{int(r >> 8), int(g >> 8), int(bl >> 8)}
				for i := range 3 {
					if d := got[i] - int(c[i]); d < -3 || d > 3 {
						t.Fatalf("colour %v: pixel %d,%d is %v", c, x, y, got)
					}
				}
			}
		}
	}
}

// TestJPEGStrips checks the restart-marker joins: the same picture gives
// the same pixels whatever the number of strips, and the markers cycle
// through RST0–RST7.
func TestJPEGStrips(t *testing.T) {
	f := busyFrame(200, 16*20+5, 9)
	single := jpegEncodeStrip(nil, f.pix, f.stride, f.w, f.h, 0, f.h, jpegQuantFor(80))
	b, err := encodeJPEG(f.pix, f.stride, f.w, f.h, 80)
	if err != nil {
		t.Fatal(err)
	}
	sos := bytes.Index(b, jpegSOS) + len(jpegSOS)
	data := b[sos : len(b)-2]
	var joined []byte
	rst := 0
	for i := 0; i < len(data); i++ {
		if data[i] == 0xff && data[i+1] >= 0xd0 && data[i+1] <= 0xd7 {
			if int(data[i+1]-0xd0) != rst%8 {
				t.Fatalf("restart marker %d is RST%d", rst, data[i+1]-0xd0)
			}
			rst++
			i++
			continue
		}
		joined = append(joined, data[i])
	}
	if want := len(strips(f.h, workers(), 16)) - 2; rst != want {
		t.Errorf("%d restart markers, want %d", rst, want)
	}
	if rst == 0 && !bytes.Equal(joined, single) {
		t.Errorf("one strip differs from a single-strip encoding")
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if _, y := psnr(t, f, img); y < 30 {
		t.Errorf("luma PSNR %.2f dB", y)
	}
}

// TestJPEGRandomSizes encodes random sizes, paddings and contents and checks
// that they decode to the right size close to the source.
func TestJPEGRandomSizes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 13))
	for range 60 {
		w, h, pad := 1+rng.IntN(150), 1+rng.IntN(150), 4*rng.IntN(3)
		kind := rng.IntN(3)
		f := newJPEGTestFrame(fmt.Sprintf("%dx%d/%d", w, h, kind), w, h, pad, func(x, y int) (uint8, uint8, uint8) {
			switch kind {
			case 0:
				return uint8(rng.Uint32()), uint8(rng.Uint32()), uint8(rng.Uint32())
			case 1:
				return uint8(x * 7), uint8(y * 3), uint8(x ^ y)
			}
			if (x/4+y/4)%2 == 0 {
				return 250, 250, 250
			}
			return 10, 10, 10
		})
		q := 1 + rng.IntN(100)
		b, err := encodeJPEG(f.pix, f.stride, f.w, f.h, q)
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s q%d: %v", f.name, q, err)
		}
		if q >= 90 && kind != 0 {
			if _, y := psnr(t, f, img); y < 30 {
				t.Errorf("%s q%d: luma PSNR %.2f", f.name, q, y)
			}
		}
	}
}

// TestJPEGLibjpegDecodes checks the output with ImageMagick's decoder
// (libjpeg), which is stricter about markers than image/jpeg.
func TestJPEGLibjpegDecodes(t *testing.T) {
	t.Parallel()
	conv, err := exec.LookPath("convert")
	if err != nil {
		t.Skip("ImageMagick convert is not installed")
	}
	f := busyFrame(1921, 1081, 5)
	b, err := encodeJPEG(f.pix, f.stride, f.w, f.h, 80)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "in.jpg")
	if err := os.WriteFile(in, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(conv, "-regard-warnings", in, "-depth", "8", "rgb:-").Output()
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	if len(out) != 3*f.w*f.h {
		t.Fatalf("convert gave %d bytes, want %d", len(out), 3*f.w*f.h)
	}
	img := image.NewRGBA(image.Rect(0, 0, f.w, f.h))
	for i := range f.w * f.h {
		copy(img.Pix[4*i:], out[3*i:3*i+3])
		img.Pix[4*i+3] = 255
	}
	if _, y := psnr(t, f, img); y < 30 {
		t.Errorf("luma PSNR %.2f dB through libjpeg", y)
	}
}

// TestJPEGSizeLimits checks the error for sizes JPEG cannot hold.
func TestJPEGSizeLimits(t *testing.T) {
	for _, s := range [][2]int{{0, 1}, {1, 0}, {1 << 16, 1}} {
		if _, err := encodeJPEG(nil, 4*s[0], s[0], s[1], 80); err == nil {
			t.Errorf("%dx%d: no error", s[0], s[1])
		}
	}
}

// BenchmarkEncodeJPEG times the encoder alone on a busy 1080p frame at
// quality 80, without X.
func BenchmarkEncodeJPEG(b *testing.B) {
	f := busyFrame(1920, 1080, 1)
	var n int
	for b.Loop() {
		out, err := encodeJPEG(f.pix, f.stride, f.w, f.h, 80)
		if err != nil {
			b.Fatal(err)
		}
		n = len(out)
	}
	b.ReportMetric(float64(n), "bytes")
}

// TestJPEGFlatBlockMatchesDCT checks that the shortcut for one-colour blocks
// codes them exactly as the DCT path does.
func TestJPEGFlatBlockMatchesDCT(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		q := jpegQuantFor(1 + rng.IntN(100))
		c := rng.IntN(3)
		r, g, b := int32(rng.IntN(256)), int32(rng.IntN(256)), int32(rng.IntN(256))
		var v float32
		switch c {
		case 0:
			v = float32(19595*r + 38470*g + 7471*b - 128<<16)
		case 1:
			v = 4 * float32(-11056*r-21712*g+32768*b)
		default:
			v = 4 * float32(32768*r-27440*g-5328*b)
		}
		var blk [64]float32
		for i := range blk {
			blk[i] = v
		}
		dct := jpegEncoder{buf: make([]byte, 1024), q: q}
		flat := jpegEncoder{buf: make([]byte, 1024), q: q}
		for range 2 { // the second block codes a zero DC difference
			dct.block(&blk, c)
			for i := range blk {
				blk[i] = v
			}
			flat.flatBlock(v, c)
		}
		dct.flush()
		flat.flush()
		if !bytes.Equal(dct.buf[:dct.p], flat.buf[:flat.p]) {
			t.Fatalf("rgb %d,%d,%d component %d: DCT %x, flat %x", r, g, b, c, dct.buf[:dct.p], flat.buf[:flat.p])
		}
	}
}

// FuzzJPEG encodes frames of fuzzed size, quality and content and checks
// that image/jpeg decodes them to the right size.
func FuzzJPEG(f *testing.F) {
	f.Add(uint16(1), uint16(1), uint8(80), uint64(0), uint8(0))
	f.Add(uint16(17), uint16(9), uint8(1), uint64(1), uint8(1))
	f.Add(uint16(300), uint16(70), uint8(100), uint64(2), uint8(2))
	f.Fuzz(func(t *testing.T, w, h uint16, quality uint8, seed uint64, kind uint8) {
		if w == 0 || h == 0 || int(w)*int(h) > 1<<20 {
			t.Skip()
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		fr := newJPEGTestFrame("fuzz", int(w), int(h), 4*int(kind%3), func(x, y int) (uint8, uint8, uint8) {
			switch kind % 3 {
			case 0:
				return uint8(rng.Uint32()), uint8(rng.Uint32()), uint8(rng.Uint32())
			case 1:
				return uint8(x / 8 * 40), uint8(y / 16 * 50), 0
			}
			return uint8(seed), uint8(seed >> 8), uint8(seed >> 16)
		})
		b, err := encodeJPEG(fr.pix, fr.stride, fr.w, fr.h, int(quality))
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if img.Bounds() != image.Rect(0, 0, fr.w, fr.h) {
			t.Fatalf("bounds %v", img.Bounds())
		}
	})
}
