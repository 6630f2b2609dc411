package capture

// This file is a baseline JPEG encoder specialised for screenshots: it reads
// frames in the X server's B, G, R, x layout and writes 4:2:0 YCbCr with the
// standard (Annex K) Huffman tables, in horizontal strips encoded in
// parallel and joined with restart markers.
//
// The quantisation tables, their quality scaling and the Huffman tables are
// those of the standard library's image/jpeg writer, whose source is:
//
//	Copyright 2011 The Go Authors. All rights reserved.
//	Use of this source code is governed by a BSD-style
//	license that can be found in the LICENSE file.
//
// The forward DCT is the floating-point Arai–Agui–Nakajima algorithm of the
// Independent JPEG Group's jfdctflt.c, with its output scaling folded into
// the quantiser's reciprocals.

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"sync"
)

// jpegUnscaledQuant are the unscaled luminance and chrominance quantisation
// tables of section K.1 of the JPEG standard in zig-zag order, as in
// image/jpeg.
var jpegUnscaledQuant = [2][64]byte{
	{
		16, 11, 12, 14, 12, 10, 16, 14,
		13, 14, 18, 17, 16, 19, 24, 40,
		26, 24, 22, 22, 24, 49, 35, 37,
		29, 40, 58, 51, 61, 60, 57, 51,
		56, 55, 64, 72, 92, 78, 64, 68,
		87, 69, 55, 56, 80, 109, 81, 87,
		95, 98, 103, 104, 103, 62, 77, 113,
		121, 112, 100, 120, 92, 101, 103, 99,
	},
	{
		17, 18, 18, 24, 21, 24, 47, 26,
		26, 47, 99, 66, 56, 66, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
		99, 99, 99, 99, 99, 99, 99, 99,
	},
}

// jpegUnzig maps a zig-zag index to the natural (row-major) index.
var jpegUnzig = [64]uint8{
	0, 1, 8, 16, 9, 2, 3, 10,
	17, 24, 32, 25, 18, 11, 4, 5,
	12, 19, 26, 33, 40, 48, 41, 34,
	27, 20, 13, 6, 7, 14, 21, 28,
	35, 42, 49, 56, 57, 50, 43, 36,
	29, 22, 15, 23, 30, 37, 44, 51,
	58, 59, 52, 45, 38, 31, 39, 46,
	53, 60, 61, 54, 47, 55, 62, 63,
}

// jpegZig maps a natural (row-major) index to the zig-zag index.
var jpegZig = func() (z [64]uint8) {
	for k, n := range jpegUnzig {
		z[n] = uint8(k)
	}
	return z
}()

// jpegHuffSpec is a Huffman table as written in a DHT segment: counts of
// codes of each length 1–16, then the symbols in code order.
type jpegHuffSpec struct {
	count [16]byte
	value []byte
}

// jpegHuffSpecs are the luminance DC, luminance AC, chrominance DC and
// chrominance AC tables of section K.3 of the JPEG standard.
var jpegHuffSpecs = [4]jpegHuffSpec{
	{
		[16]byte{0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0},
		[]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
	},
	{
		[16]byte{0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 125},
		[]byte{
			0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12,
			0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
			0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08,
			0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0,
			0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16,
			0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28,
			0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39,
			0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
			0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59,
			0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
			0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79,
			0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
			0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98,
			0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
			0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6,
			0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5,
			0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4,
			0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
			0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea,
			0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
			0xf9, 0xfa,
		},
	},
	{
		[16]byte{0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0},
		[]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
	},
	{
		[16]byte{0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 119},
		[]byte{
			0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21,
			0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71,
			0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91,
			0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0,
			0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34,
			0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26,
			0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38,
			0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
			0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58,
			0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
			0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78,
			0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
			0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96,
			0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5,
			0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4,
			0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3,
			0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2,
			0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda,
			0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9,
			0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
			0xf9, 0xfa,
		},
	},
}

// jpegHuffTable maps a symbol to its code: the code length in the high 8
// bits and the code in the low 16.
type jpegHuffTable [256]uint32

// jpegHuff are the compiled jpegHuffSpecs, in the same order.
var jpegHuff = func() (t [4]jpegHuffTable) {
	for i, s := range jpegHuffSpecs {
		code, k := uint32(0), 0
		for n := range len(s.count) {
			for range s.count[n] {
				t[i][s.value[k]] = uint32(n+1)<<24 | code
				code++
				k++
			}
			code <<= 1
		}
	}
	return t
}()

// jpegDHT is the DHT segment defining the four jpegHuffSpecs.
var jpegDHT = func() []byte {
	n := 2
	for _, s := range jpegHuffSpecs {
		n += 1 + 16 + len(s.value)
	}
	b := []byte{0xff, 0xc4, byte(n >> 8), byte(n)}
	for i, s := range jpegHuffSpecs {
		b = append(b, "\x00\x10\x01\x11"[i])
		b = append(b, s.count[:]...)
		b = append(b, s.value...)
	}
	return b
}()

// jpegSOS is the start-of-scan header for the three interleaved components,
// Y with tables 0 and Cb, Cr with tables 1.
var jpegSOS = []byte{
	0xff, 0xda, 0x00, 0x0c, 0x03, 0x01, 0x00, 0x02,
	0x11, 0x03, 0x11, 0x00, 0x3f, 0x00,
}

// jpegAANScale are the AAN DCT's output scale factors: cos(kπ/16)·√2 for
// k > 0, and 1.
var jpegAANScale = [8]float64{
	1.0, 1.387039845, 1.306562965, 1.175875602,
	1.0, 0.785694958, 0.541196100, 0.275899379,
}

// jpegQuant holds the quantisation for one quality: the tables as written to
// the file, and per coefficient the multiplier that turns an output of the
// AAN DCT in jpegFDCTQuant into a quantised value.
type jpegQuant struct {
	// table are the luminance and chrominance tables in zig-zag order.
	table [2][64]byte
	// recip are the luminance and chrominance multipliers in natural
	// order. They include the AAN output scaling and the fixed-point
	// scaling of the samples jpegLoadMCU produces.
	recip [2][64]float32
}

// jpegQuants caches the quantisation of each quality 1–100.
var jpegQuants [101]struct {
	once sync.Once
	q    jpegQuant
}

// jpegQuantFor returns the quantisation for quality, clamped to 1–100. The
// tables are scaled exactly as image/jpeg scales them.
func jpegQuantFor(quality int) *jpegQuant {
	quality = min(max(quality, 1), 100)
	c := &jpegQuants[quality]
	c.once.Do(func() {
		scale := 200 - quality*2
		if quality < 50 {
			scale = 5000 / quality
		}
		for i := range 2 {
			// Luma samples are scaled by 1<<16, chroma samples are sums
			// of four pixels scaled by 1<<16.
			sampleScale := float64(1 << 16)
			if i == 1 {
				sampleScale *= 4
			}
			for k := range 64 {
				x := (int(jpegUnscaledQuant[i][k])*scale + 50) / 100
				x = min(max(x, 1), 255)
				c.q.table[i][k] = uint8(x)
				n := jpegUnzig[k]
				c.q.recip[i][n] = float32(1 / (float64(x) * jpegAANScale[n>>3] * jpegAANScale[n&7] * 8 * sampleScale))
			}
		}
	})
	return &c.q
}

// jpegMaxStripMCUs is the most MCUs a restart interval may hold.
const jpegMaxStripMCUs = 65535

// jpegBufPool recycles the strips' output buffers.
var jpegBufPool = sync.Pool{New: func() any { return new([]byte) }}

// encodeJPEG writes a baseline 4:2:0 JPEG of the w×h frame in B, G, R, x
// layout with rows stride bytes apart, at an image/jpeg quality (1–100).
func encodeJPEG(pix []byte, stride, w, h, quality int) ([]byte, error) {
	if w < 1 || h < 1 || w >= 1<<16 || h >= 1<<16 {
		return nil, errors.New("encode jpeg: image size out of range")
	}
	q := jpegQuantFor(quality)
	mcusPerRow := (w + 15) / 16
	bounds := strips(h, workers(), 16)
	if maxRows := jpegMaxStripMCUs / mcusPerRow * 16; bounds[1] > maxRows {
		bounds = []int{0}
		for y := maxRows; y < h; y += maxRows {
			bounds = append(bounds, y)
		}
		bounds = append(bounds, h)
	}
	n := len(bounds) - 1
	outs := make([]*[]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		outs[i] = jpegBufPool.Get().(*[]byte)
		wg.Add(1)
		go func() {
			defer wg.Done()
			*outs[i] = jpegEncodeStrip((*outs[i])[:0], pix, stride, w, h, bounds[i], bounds[i+1], q)
		}()
	}
	wg.Wait()

	total := 512
	for _, o := range outs {
		total += len(*o) + 2
	}
	out := make([]byte, 0, total)
	out = append(out, 0xff, 0xd8)
	// JFIF APP0: version 1.1, no density units, 1:1 aspect ratio.
	out = append(out, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0)
	out = append(out, 0xff, 0xdb, 0, 2+2*65)
	for i := range q.table {
		out = append(out, byte(i))
		out = append(out, q.table[i][:]...)
	}
	out = append(out, 0xff, 0xc0, 0, 17, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 3,
		1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1)
	out = append(out, jpegDHT...)
	if n > 1 {
		interval := mcusPerRow * (bounds[1] - bounds[0]) / 16
		out = append(out, 0xff, 0xdd, 0, 4, byte(interval>>8), byte(interval))
	}
	out = append(out, jpegSOS...)
	for i, o := range outs {
		out = append(out, *o...)
		if i < n-1 {
			out = append(out, 0xff, 0xd0+byte(i%8))
		}
		jpegBufPool.Put(o)
	}
	return append(out, 0xff, 0xd9), nil
}

// jpegEncodeStrip appends to dst the entropy-coded data of the rows y0 to y1
// of the w×h frame, y0 a multiple of 16, starting with DC predictors of zero
// and ending padded with 1 bits to a byte boundary.
func jpegEncodeStrip(dst []byte, pix []byte, stride, w, h, y0, y1 int, q *jpegQuant) []byte {
	e := jpegEncoder{buf: dst[:cap(dst)], p: len(dst), q: q}
	var blk [6][64]float32
	var edge [16 * 64]byte
	for y := y0; y < y1; y += 16 {
		for x := 0; x < w; x += 16 {
			src, sstride := pix[y*stride+4*x:], stride
			if x+16 > w || y+16 > h {
				// Replicate the last column and row into the
				// missing pixels, as image/jpeg does.
				for j := range 16 {
					row := pix[min(y+j, h-1)*stride:]
					for i := range 16 {
						o := 4 * min(x+i, w-1)
						copy(edge[64*j+4*i:64*j+4*i+4], row[o:o+4])
					}
				}
				src, sstride = edge[:], 64
			}
			if len(e.buf)-e.p < 6*jpegMaxBlockBytes {
				e.grow(6 * jpegMaxBlockBytes)
			}
			flat := jpegFlatBlocks(src, sstride)
			if flat == 0x1f {
				// One colour: every block is its DC alone.
				b, g, r := int32(src[0]), int32(src[1]), int32(src[2])
				yv := float32(19595*r + 38470*g + 7471*b - 128<<16)
				for range 4 {
					e.flatBlock(yv, 0)
				}
				e.flatBlock(4*float32(-11056*r-21712*g+32768*b), 1)
				e.flatBlock(4*float32(32768*r-27440*g-5328*b), 2)
				continue
			}
			jpegLoadMCU(src, sstride, &blk)
			for i := range 4 {
				if flat&(1<<i) != 0 {
					e.flatBlock(blk[i][0], 0)
				} else {
					e.block(&blk[i], 0)
				}
			}
			e.block(&blk[4], 1)
			e.block(&blk[5], 2)
		}
	}
	// Pad the last byte with 1 bits and flush.
	e.flush()
	return e.buf[:e.p]
}

// jpegFlatBlocks reports which of the four 8×8 blocks of the 16×16 pixels at
// src (rows stride bytes apart) have one colour: bit i for block i in
// raster order, and bit 4 when all four have the same colour.
func jpegFlatBlocks(src []byte, stride int) uint {
	const rgb = 0x00ffffff00ffffff
	var flat uint
	var firsts [4]uint64
	for i := range 4 {
		o := (i>>1)*8*stride + (i&1)*32
		first := binary.LittleEndian.Uint64(src[o:]) & rgb
		first = first&0xffffffff | first<<32
		firsts[i] = first
		var d uint64
		for j := range 8 {
			r := src[o+j*stride:]
			r = r[:32:32]
			d |= binary.LittleEndian.Uint64(r[0:]) ^ first
			d |= binary.LittleEndian.Uint64(r[8:]) ^ first
			d |= binary.LittleEndian.Uint64(r[16:]) ^ first
			d |= binary.LittleEndian.Uint64(r[24:]) ^ first
		}
		if d&rgb == 0 {
			flat |= 1 << i
		}
	}
	if flat == 0xf && firsts[0] == firsts[1] && firsts[0] == firsts[2] && firsts[0] == firsts[3] {
		flat |= 0x10
	}
	return flat
}

// jpegMaxBlockBytes bounds the bytes one block can produce: 64 codes of at
// most 16+11 bits, every byte stuffed, plus the bits left over from before.
const jpegMaxBlockBytes = (64*27/8 + 8) * 2

// jpegEncoder is the entropy coder of one strip.
type jpegEncoder struct {
	// buf is the output; bytes from p on are free.
	buf []byte
	p   int
	// acc holds nbits pending bits in its low end (higher bits are stale).
	acc   uint64
	nbits uint
	// dc are the previous blocks' quantised DC values of Y, Cb and Cr.
	dc [3]int32
	q  *jpegQuant
}

// grow makes room for at least n more bytes.
func (e *jpegEncoder) grow(n int) {
	nb := make([]byte, max(2*len(e.buf), e.p+n, 64<<10))
	copy(nb, e.buf[:e.p])
	e.buf = nb
}

// flush pads the pending bits with 1 bits to a byte boundary and writes
// them.
func (e *jpegEncoder) flush() {
	if len(e.buf)-e.p < 16 {
		e.grow(16)
	}
	pad := (8 - e.nbits%8) % 8
	e.acc = e.acc<<pad | (1<<pad - 1)
	e.nbits += pad
	for e.nbits >= 8 {
		e.nbits -= 8
		b := byte(e.acc >> e.nbits)
		e.buf[e.p] = b
		e.p++
		if b == 0xff {
			e.buf[e.p] = 0
			e.p++
		}
	}
}

// jpegPut32 writes the 32 bits w at buf[p:], stuffing a zero byte after
// each 0xFF byte, and returns the new end.
func jpegPut32(buf []byte, p int, w uint32) int {
	binary.BigEndian.PutUint32(buf[p:], w)
	if (^w-0x01010101)&w&0x80808080 == 0 {
		return p + 4
	}
	return jpegPut32Stuffed(buf, p, w)
}

// jpegPut32Stuffed is jpegPut32's slow path, for words holding a 0xFF byte.
func jpegPut32Stuffed(buf []byte, p int, w uint32) int {
	for s := 24; s >= 0; s -= 8 {
		b := byte(w >> s)
		buf[p] = b
		p++
		if b == 0xff {
			buf[p] = 0
			p++
		}
	}
	return p
}

// block transforms, quantises and entropy-codes one block of component c
// (0 Y, 1 Cb, 2 Cr). The caller guarantees jpegMaxBlockBytes of room.
func (e *jpegEncoder) block(b *[64]float32, c int) {
	var zz [64]int32
	mask := jpegFDCTQuant(b, &e.q.recip[min(c, 1)&1], &zz)
	e.huff(&zz, mask, c)
}

// flatBlock entropy-codes a block of component c whose samples all have
// the value v, in jpegLoadMCU's scaling: its DC coefficient alone.
func (e *jpegEncoder) flatBlock(v float32, c int) {
	var zz [64]int32
	// The DCT's DC output for a flat block is 64 times the sample.
	zz[0] = int32(64*v*e.q.recip[min(c, 1)&1][0]+16384.5) - 16384
	e.huff(&zz, 1, c)
}

// huff entropy-codes the quantised block zz (zig-zag order) of component c,
// whose nonzero AC coefficients are the set bits of mask.
func (e *jpegEncoder) huff(zz *[64]int32, mask uint64, c int) {
	t := min(c, 1) & 1
	buf, p, acc, nbits := e.buf, e.p, e.acc, e.nbits

	dcTab, acTab := &jpegHuff[2*t], &jpegHuff[2*t+1]
	diff := zz[0] - e.dc[c]
	e.dc[c] = zz[0]
	sgn := diff >> 31
	a, v := (diff^sgn)-sgn, diff+sgn
	size := uint(bits.Len32(uint32(a))) & 15
	hc := dcTab[size]
	n := uint(hc>>24) + size
	acc = acc<<(n&63) | uint64(hc&0xffff)<<size | uint64(uint32(v)&(1<<size-1))
	nbits += n
	if nbits >= 32 {
		nbits -= 32
		p = jpegPut32(buf, p, uint32(acc>>(nbits&63)))
	}

	last := 0
	for m := mask &^ 1; m != 0; m &= m - 1 {
		k := bits.TrailingZeros64(m) & 63
		run := k - last - 1
		last = k
		for run >= 16 {
			hc := acTab[0xf0]
			acc = acc<<((hc>>24)&63) | uint64(hc&0xffff)
			nbits += uint(hc >> 24)
			if nbits >= 32 {
				nbits -= 32
				p = jpegPut32(buf, p, uint32(acc>>(nbits&63)))
			}
			run -= 16
		}
		x := zz[k]
		// a = |x|; v = x, or x-1 for negative x (the value bits of
		// a negative coefficient are those of x-1), without branches.
		sgn := x >> 31
		a, v := (x^sgn)-sgn, x+sgn
		if a > 1023 {
			// Baseline AC coefficients have at most 10 bits.
			a = 1023
			v = 1023
			if x < 0 {
				v = -1024
			}
		}
		size := uint(bits.Len32(uint32(a))) & 15
		hc := acTab[(run<<4|int(size))&0xff]
		n := uint(hc>>24) + size
		acc = acc<<(n&63) | uint64(hc&0xffff)<<size | uint64(uint32(v)&(1<<size-1))
		nbits += n
		if nbits >= 32 {
			nbits -= 32
			p = jpegPut32(buf, p, uint32(acc>>(nbits&63)))
		}
	}
	if last != 63 {
		hc := acTab[0x00]
		acc = acc<<((hc>>24)&63) | uint64(hc&0xffff)
		nbits += uint(hc >> 24)
		if nbits >= 32 {
			nbits -= 32
			p = jpegPut32(buf, p, uint32(acc>>(nbits&63)))
		}
	}
	e.p, e.acc, e.nbits = p, acc, nbits
}

// jpegLoadMCU converts the 16×16 pixels at src (B, G, R, x; rows stride
// bytes apart) into the MCU's four luma blocks and its Cb and Cr blocks,
// each chroma sample from the 2×2 pixels it covers. Samples are centred on
// zero and in fixed point: luma scaled by 1<<16, chroma by 1<<18 (the sum
// of four pixels), with the JFIF coefficients of image/color.
func jpegLoadMCU(src []byte, stride int, blk *[6][64]float32) {
	cb, cr := &blk[4], &blk[5]
	for cy := range 8 {
		r0 := src[2*cy*stride:]
		r0 = r0[:64:64]
		r1 := src[(2*cy+1)*stride:]
		r1 = r1[:64:64]
		yo := (2 * cy & 7) * 8
		for bx := range 2 {
			yb := &blk[(cy>>2)*2+bx]
			for i := range 4 {
				cx := bx*4 + i
				s0 := r0[8*cx : 8*cx+8 : 8*cx+8]
				s1 := r1[8*cx : 8*cx+8 : 8*cx+8]
				b0, g0, rr0 := int32(s0[0]), int32(s0[1]), int32(s0[2])
				b1, g1, rr1 := int32(s0[4]), int32(s0[5]), int32(s0[6])
				b2, g2, rr2 := int32(s1[0]), int32(s1[1]), int32(s1[2])
				b3, g3, rr3 := int32(s1[4]), int32(s1[5]), int32(s1[6])
				o := (yo + 2*i) & 63
				yb[o] = float32(19595*rr0 + 38470*g0 + 7471*b0 - 128<<16)
				yb[(o+1)&63] = float32(19595*rr1 + 38470*g1 + 7471*b1 - 128<<16)
				yb[(o+8)&63] = float32(19595*rr2 + 38470*g2 + 7471*b2 - 128<<16)
				yb[(o+9)&63] = float32(19595*rr3 + 38470*g3 + 7471*b3 - 128<<16)
				r, g, b := rr0+rr1+rr2+rr3, g0+g1+g2+g3, b0+b1+b2+b3
				c := (cy*8 + cx) & 63
				cb[c] = float32(-11056*r - 21712*g + 32768*b)
				cr[c] = float32(32768*r - 27440*g - 5328*b)
			}
		}
	}
}

// jpegFDCTQuant transforms d with the floating-point AAN forward DCT (IJG
// jfdctflt.c), whose outputs are the true DCT coefficients times
// 8·s(u)·s(v), s being the jpegAANScale factors; multiplies them by recip
// (natural order); and stores them rounded in zz in zig-zag order. It
// returns the set of nonzero coefficients: bit k for zig-zag index k. d is
// left holding the row pass's output.
func jpegFDCTQuant(d *[64]float32, recip *[64]float32, zz *[64]int32) uint64 {
	const (
		c0707 = 0.707106781
		c0382 = 0.382683433
		c0541 = 0.541196100
		c1306 = 1.306562965
	)
	for i := 0; i < 64; i += 8 {
		r := (*[8]float32)(d[i : i+8])
		tmp0 := r[0] + r[7]
		tmp7 := r[0] - r[7]
		tmp1 := r[1] + r[6]
		tmp6 := r[1] - r[6]
		tmp2 := r[2] + r[5]
		tmp5 := r[2] - r[5]
		tmp3 := r[3] + r[4]
		tmp4 := r[3] - r[4]

		tmp10 := tmp0 + tmp3
		tmp13 := tmp0 - tmp3
		tmp11 := tmp1 + tmp2
		tmp12 := tmp1 - tmp2
		r[0] = tmp10 + tmp11
		r[4] = tmp10 - tmp11
		z1 := (tmp12 + tmp13) * c0707
		r[2] = tmp13 + z1
		r[6] = tmp13 - z1

		tmp10 = tmp4 + tmp5
		tmp11 = tmp5 + tmp6
		tmp12 = tmp6 + tmp7
		z5 := (tmp10 - tmp12) * c0382
		z2 := c0541*tmp10 + z5
		z4 := c1306*tmp12 + z5
		z3 := tmp11 * c0707
		z11 := tmp7 + z3
		z13 := tmp7 - z3
		r[5] = z13 + z2
		r[3] = z13 - z2
		r[1] = z11 + z4
		r[7] = z11 - z4
	}
	var mask uint64
	for i := range 8 {
		tmp0 := d[i] + d[56+i]
		tmp7 := d[i] - d[56+i]
		tmp1 := d[8+i] + d[48+i]
		tmp6 := d[8+i] - d[48+i]
		tmp2 := d[16+i] + d[40+i]
		tmp5 := d[16+i] - d[40+i]
		tmp3 := d[24+i] + d[32+i]
		tmp4 := d[24+i] - d[32+i]

		tmp10 := tmp0 + tmp3
		tmp13 := tmp0 - tmp3
		tmp11 := tmp1 + tmp2
		tmp12 := tmp1 - tmp2
		mask |= jpegQuantOne(zz, recip, i, tmp10+tmp11)
		mask |= jpegQuantOne(zz, recip, 32+i, tmp10-tmp11)
		z1 := (tmp12 + tmp13) * c0707
		mask |= jpegQuantOne(zz, recip, 16+i, tmp13+z1)
		mask |= jpegQuantOne(zz, recip, 48+i, tmp13-z1)

		tmp10 = tmp4 + tmp5
		tmp11 = tmp5 + tmp6
		tmp12 = tmp6 + tmp7
		z5 := (tmp10 - tmp12) * c0382
		z2 := c0541*tmp10 + z5
		z4 := c1306*tmp12 + z5
		z3 := tmp11 * c0707
		z11 := tmp7 + z3
		z13 := tmp7 - z3
		mask |= jpegQuantOne(zz, recip, 40+i, z13+z2)
		mask |= jpegQuantOne(zz, recip, 24+i, z13-z2)
		mask |= jpegQuantOne(zz, recip, 8+i, z11+z4)
		mask |= jpegQuantOne(zz, recip, 56+i, z11-z4)
	}
	return mask
}

// jpegQuantOne quantises the coefficient x at natural index n with recip,
// rounding half away from zero as image/jpeg does (the offset keeps the
// truncating conversion a floor), stores it in zz at its zig-zag index and
// returns its bit in the nonzero set.
func jpegQuantOne(zz *[64]int32, recip *[64]float32, n int, x float32) uint64 {
	v := int32(x*recip[n&63]+16384.5) - 16384
	z := jpegZig[n&63] & 63
	zz[z] = v
	return uint64(uint32(v|-v)>>31) << z
}
