package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"image"
	"image/jpeg"
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
// JPEG: each strip is converted straight to 4:2:0 YCbCr and encoded by
// image/jpeg; the entropy-coded strips are joined with restart markers (DRI),
// which reset the DC predictors exactly where a new encoder started.

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

// encodeJPEG writes a baseline 4:2:0 JPEG of the w×h frame.
func encodeJPEG(pix []byte, stride, w, h, quality int) ([]byte, error) {
	mcusPerRow := (w + 15) / 16
	// The restart interval counts MCUs in a 16-bit field.
	maxStripRows := 65535 / mcusPerRow * 16
	bounds := strips(h, workers(), 16)
	if bounds[1] > maxStripRows {
		bounds = []int{0}
		for y := maxStripRows; y < h; y += maxStripRows {
			bounds = append(bounds, y)
		}
		bounds = append(bounds, h)
	}
	n := len(bounds) - 1
	outs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			y0, y1 := bounds[i], bounds[i+1]
			img := toYCbCr420(pix[y0*stride:], stride, w, y1-y0)
			outs[i].Grow(w * (y1 - y0) / 4)
			errs[i] = jpeg.Encode(&outs[i], img, &jpeg.Options{Quality: quality})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("encode jpeg: %w", err)
		}
	}
	if n == 1 {
		return outs[0].Bytes(), nil
	}
	head, data0, err := splitJPEG(outs[0].Bytes())
	if err != nil {
		return nil, err
	}
	total := len(head) + 6 + 4
	datas := [][]byte{data0}
	for i := 1; i < n; i++ {
		_, d, err := splitJPEG(outs[i].Bytes())
		if err != nil {
			return nil, err
		}
		datas = append(datas, d)
	}
	for _, d := range datas {
		total += len(d) + 2
	}
	out := make([]byte, 0, total)
	sof := bytes.Index(head, []byte{0xff, 0xc0})
	sos := bytes.LastIndex(head, []byte{0xff, 0xda})
	if sof < 0 || sos < 0 {
		return nil, fmt.Errorf("encode jpeg: unexpected encoder output")
	}
	out = append(out, head[:sos]...)
	binary.BigEndian.PutUint16(out[sof+5:], uint16(h))
	interval := mcusPerRow * (bounds[1] - bounds[0]) / 16
	out = append(out, 0xff, 0xdd, 0, 4, byte(interval>>8), byte(interval))
	out = append(out, head[sos:]...)
	for i, d := range datas {
		out = append(out, d...)
		if i < n-1 {
			out = append(out, 0xff, 0xd0+byte(i%8))
		}
	}
	return append(out, 0xff, 0xd9), nil
}

// splitJPEG splits image/jpeg output into its headers up to and including
// the SOS segment, and the entropy-coded data before EOI.
func splitJPEG(b []byte) (head, data []byte, err error) {
	p := 2
	for p+4 <= len(b) {
		if b[p] != 0xff {
			break
		}
		marker := b[p+1]
		l := int(binary.BigEndian.Uint16(b[p+2:]))
		p += 2 + l
		if marker == 0xda {
			if p > len(b)-2 {
				break
			}
			return b[:p], b[p : len(b)-2], nil
		}
	}
	return nil, nil, fmt.Errorf("encode jpeg: unexpected encoder output")
}

// toYCbCr420 converts BGRx rows to a 4:2:0 YCbCr image with the JFIF
// (BT.601 full range) integer formulas image/color uses.
func toYCbCr420(pix []byte, stride, w, h int) *image.YCbCr {
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	cw := (w + 1) / 2
	for y := 0; y < h; y += 2 {
		row0 := pix[y*stride : y*stride+4*w]
		row1 := row0
		if y+1 < h {
			row1 = pix[(y+1)*stride : (y+1)*stride+4*w]
		}
		y0 := img.Y[y*img.YStride : y*img.YStride+w]
		y1 := y0
		if y+1 < h {
			y1 = img.Y[(y+1)*img.YStride : (y+1)*img.YStride+w]
		}
		cb := img.Cb[(y/2)*img.CStride : (y/2)*img.CStride+cw]
		cr := img.Cr[(y/2)*img.CStride : (y/2)*img.CStride+cw]
		for cx := 0; cx < cw; cx++ {
			x0 := 2 * cx
			x1 := min(x0+1, w-1)
			a := row0[4*x0 : 4*x0+3 : 4*x0+3]
			bb := row0[4*x1 : 4*x1+3 : 4*x1+3]
			c := row1[4*x0 : 4*x0+3 : 4*x0+3]
			d := row1[4*x1 : 4*x1+3 : 4*x1+3]
			ra, ga, ba := int32(a[2]), int32(a[1]), int32(a[0])
			rb, gb, bbl := int32(bb[2]), int32(bb[1]), int32(bb[0])
			rc, gc, bc := int32(c[2]), int32(c[1]), int32(c[0])
			rd, gd, bd := int32(d[2]), int32(d[1]), int32(d[0])
			y0[x0] = uint8((19595*ra + 38470*ga + 7471*ba + 1<<15) >> 16)
			y0[x1] = uint8((19595*rb + 38470*gb + 7471*bbl + 1<<15) >> 16)
			y1[x0] = uint8((19595*rc + 38470*gc + 7471*bc + 1<<15) >> 16)
			y1[x1] = uint8((19595*rd + 38470*gd + 7471*bd + 1<<15) >> 16)
			// Averages of the 2×2 block, then the chroma formulas of
			// color.RGBToYCbCr.
			r, g, b := (ra+rb+rc+rd+2)>>2, (ga+gb+gc+gd+2)>>2, (ba+bbl+bc+bd+2)>>2
			cbv := -11056*r - 21712*g + 32768*b + 257<<15
			if uint32(cbv)&0xff000000 == 0 {
				cbv >>= 16
			} else {
				cbv = ^(cbv >> 31)
			}
			crv := 32768*r - 27440*g - 5328*b + 257<<15
			if uint32(crv)&0xff000000 == 0 {
				crv >>= 16
			} else {
				crv = ^(crv >> 31)
			}
			cb[cx], cr[cx] = uint8(cbv), uint8(crv)
		}
	}
	return img
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
