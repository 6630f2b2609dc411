package capture

import (
	"bytes"
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"runtime"
	"sync"

	"github.com/klauspost/compress/flate"
)

// The encoders read frames in the X server's layout (B, G, R, x per pixel)
// and split the image into horizontal strips compressed on all cores.
//
// PNG: every row is filtered with "Up" (screens repeat vertically: window
// backgrounds, text lines), each strip is deflated at klauspost/compress's
// fastest LZ level with an independent window and ends in a sync flush, so
// the strips' streams concatenate into one valid zlib stream; the Adler-32s
// are combined arithmetically.
//
// JPEG: see jpeg.go; each strip is converted straight to 4:2:0 YCbCr and
// entropy-coded on its own, and the strips are joined with restart markers
// (DRI), which reset the DC predictors exactly where a new strip starts.

// pngLevel is the deflate level: the fastest LZ level keeps the encoder
// several times quicker than libpng's default while screens, with their large
// flat areas, still compress well.
const pngLevel = flate.BestSpeed

// minStripRows keeps strips large enough that their flush and start-up
// overhead stays negligible.
const minStripRows = 32

// strips splits h rows into about n strips whose height is a multiple of
// align, and returns their start rows plus h at the end.
func strips(h, n, align int) []int {
	if n < 1 {
		n = 1
	}
	per := (h + n - 1) / n
	per = (per + align - 1) / align * align
	if per < minStripRows {
		per = (minStripRows + align - 1) / align * align
	}
	starts := []int{0}
	for y := per; y < h; y += per {
		starts = append(starts, y)
	}
	return append(starts, h)
}

// workers is how many strips to make: a few per core, so a slow strip does
// not leave a core idle.
func workers() int { return runtime.GOMAXPROCS(0) * 2 }

var flatePool = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, pngLevel)
	return w
}}

// encodePNG writes an 8-bit RGB PNG of the w×h frame.
func encodePNG(pix []byte, stride, w, h int) []byte {
	bounds := strips(h, workers(), 1)
	n := len(bounds) - 1
	outs := make([]bytes.Buffer, n)
	sums := make([]uint32, n)
	lens := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			y0, y1 := bounds[i], bounds[i+1]
			rowLen := 1 + 3*w
			raw := make([]byte, rowLen*(y1-y0))
			for y := y0; y < y1; y++ {
				filterRow(raw[(y-y0)*rowLen:(y-y0+1)*rowLen], pix, stride, w, y)
			}
			sums[i] = adler32.Checksum(raw)
			lens[i] = len(raw)
			outs[i].Grow(len(raw) / 4)
			fw := flatePool.Get().(*flate.Writer)
			fw.Reset(&outs[i])
			_, _ = fw.Write(raw)
			if i == n-1 {
				_ = fw.Close()
			} else {
				_ = fw.Flush()
			}
			flatePool.Put(fw)
		}()
	}
	wg.Wait()

	sum := sums[0]
	for i := 1; i < n; i++ {
		sum = adler32Combine(sum, sums[i], lens[i])
	}
	idatLen := 2 + 4
	for i := range outs {
		idatLen += outs[i].Len()
	}
	out := make([]byte, 0, 8+25+12+idatLen+12)
	out = append(out, "\x89PNG\r\n\x1a\n"...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	out = appendChunk(out, "IHDR", ihdr[:])

	out = binary.BigEndian.AppendUint32(out, uint32(idatLen))
	start := len(out)
	out = append(out, "IDAT"...)
	out = append(out, 0x78, 0x01) // zlib header: deflate, 32K window, fastest
	for i := range outs {
		out = append(out, outs[i].Bytes()...)
	}
	out = binary.BigEndian.AppendUint32(out, sum)
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
	return appendChunk(out, "IEND", nil)
}

func appendChunk(out []byte, typ string, data []byte) []byte {
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	start := len(out)
	out = append(out, typ...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
}

// filterRow writes row y as RGB with the Up filter (None for row 0).
func filterRow(dst, pix []byte, stride, w, y int) {
	cur := pix[y*stride : y*stride+4*w]
	d := dst[1 : 1+3*w]
	if y == 0 {
		dst[0] = 0
		for x := 0; x < w; x++ {
			s := cur[4*x : 4*x+3 : 4*x+3]
			o := d[3*x : 3*x+3 : 3*x+3]
			o[0], o[1], o[2] = s[2], s[1], s[0]
		}
		return
	}
	prev := pix[(y-1)*stride : (y-1)*stride+4*w]
	dst[0] = 2
	for x := 0; x < w; x++ {
		s := cur[4*x : 4*x+3 : 4*x+3]
		p := prev[4*x : 4*x+3 : 4*x+3]
		o := d[3*x : 3*x+3 : 3*x+3]
		o[0], o[1], o[2] = s[2]-p[2], s[1]-p[1], s[0]-p[0]
	}
}

// adler32Combine is zlib's adler32_combine: the Adler-32 of A||B from those
// of A and B and the length of B.
func adler32Combine(a1, a2 uint32, len2 int) uint32 {
	const base = 65521
	rem := uint64(len2 % base)
	sum1 := uint64(a1 & 0xffff)
	sum2 := (rem * sum1) % base
	sum1 += uint64(a2&0xffff) + base - 1
	sum2 += uint64(a1>>16) + uint64(a2>>16) + base - rem
	sum1 %= base
	sum2 %= base
	return uint32(sum2<<16 | sum1)
}

// downscale shrinks a frame to dw×dh with a box filter (each output pixel is
// the mean of the source pixels it covers), which keeps thin text legible.
// It returns pixels in the same B, G, R, x layout.
func downscale(pix []byte, stride, w, h, dw, dh int) []byte {
	out := make([]byte, dw*dh*4)
	xs := make([]int, dw+1)
	for i := range xs {
		xs[i] = i * w / dw
	}
	rows := strips(dh, workers(), 1)
	var wg sync.WaitGroup
	for i := 0; i+1 < len(rows); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for oy := rows[i]; oy < rows[i+1]; oy++ {
				sy0, sy1 := oy*h/dh, (oy+1)*h/dh
				if sy1 <= sy0 {
					sy1 = sy0 + 1
				}
				o := out[oy*dw*4 : (oy+1)*dw*4]
				for ox := 0; ox < dw; ox++ {
					sx0, sx1 := xs[ox], xs[ox+1]
					if sx1 <= sx0 {
						sx1 = sx0 + 1
					}
					var b, g, r uint32
					for sy := sy0; sy < sy1; sy++ {
						row := pix[sy*stride+4*sx0 : sy*stride+4*sx1]
						for p := 0; p+3 < len(row); p += 4 {
							b += uint32(row[p])
							g += uint32(row[p+1])
							r += uint32(row[p+2])
						}
					}
					cnt := uint32((sy1 - sy0) * (sx1 - sx0))
					o[4*ox] = uint8((b + cnt/2) / cnt)
					o[4*ox+1] = uint8((g + cnt/2) / cnt)
					o[4*ox+2] = uint8((r + cnt/2) / cnt)
					o[4*ox+3] = 0xff
				}
			}
		}()
	}
	wg.Wait()
	return out
}
