package invindex

import "fmt"

// A posting list's doc ids are stored as a roaring bitmap in the portable
// serialization without run containers (RoaringFormatSpec, cookie 12346), so
// any roaring implementation reads them (roaring.Bitmap.FromBuffer, for
// filters and intersections) while Search decodes them in blocks of 128
// straight from the mapped bytes:
//
//	u32 cookie 12346, u32 container count C
//	C × {u16 key (doc >> 16), u16 cardinality - 1}
//	C × u32 offset of the container from the start of the bitmap
//	containers: cardinality <= 4096: sorted u16 low halves;
//	            otherwise 1024 u64 words, bit i of word j = low half 64j + i

const (
	roaringCookieNoRun = 12346
	arrayMaxCard       = 4096 // larger containers are bitmaps
	bitmapBytes        = 8192 // a bitmap container
)

func containerBytes(card int) int {
	if card > arrayMaxCard {
		return bitmapBytes
	}
	return 2 * card
}

// bitmapSize returns the serialized size of the bitmap of docs (sorted,
// unique).
func bitmapSize(docs []uint32) int {
	n := 8
	for i := 0; i < len(docs); {
		j := containerEnd(docs, i)
		n += 8 + containerBytes(j-i)
		i = j
	}
	return n
}

// containerEnd returns the end of the run of docs from i sharing docs[i]'s key.
func containerEnd(docs []uint32, i int) int {
	key := docs[i] >> 16
	j := i + 1
	for j < len(docs) && docs[j]>>16 == key {
		j++
	}
	return j
}

// appendBitmap appends the serialization of docs (sorted, unique) to dst,
// byte for byte what roaring's WriteTo writes for the same set.
func appendBitmap(dst []byte, docs []uint32) []byte {
	c := 0
	for i := 0; i < len(docs); i = containerEnd(docs, i) {
		c++
	}
	start := len(dst)
	dst = le.AppendUint32(dst, roaringCookieNoRun)
	dst = le.AppendUint32(dst, uint32(c))
	dst = append(dst, make([]byte, 8*c)...)
	off := 8 + 8*c
	k := 0
	for i := 0; i < len(docs); k++ {
		j := containerEnd(docs, i)
		card := j - i
		le.PutUint16(dst[start+8+4*k:], uint16(docs[i]>>16))
		le.PutUint16(dst[start+10+4*k:], uint16(card-1))
		le.PutUint32(dst[start+8+4*c+4*k:], uint32(off))
		off += containerBytes(card)
		if card <= arrayMaxCard {
			for _, d := range docs[i:j] {
				dst = le.AppendUint16(dst, uint16(d))
			}
		} else {
			at := len(dst)
			dst = append(dst, make([]byte, bitmapBytes)...)
			w := dst[at:]
			for _, d := range docs[i:j] {
				lo := d & 0xFFFF
				w[lo>>3] |= 1 << (lo & 7) // little-endian words: bit i of the container is bit i%8 of byte i/8
			}
		}
		i = j
	}
	return dst
}

// checkBitmap validates the header of a serialized bitmap of card values
// below n and returns its container count: cookie, strictly ascending keys
// (none beyond the one of n-1), cardinalities summing to card, offsets
// exactly consecutive and the last container ending at len(b). The values
// inside containers are checked as Search decodes them.
func checkBitmap(b []byte, card int, n uint32) (int, error) {
	if len(b) < 8 || le.Uint32(b) != roaringCookieNoRun {
		return 0, fmt.Errorf("bitmap without the no-run roaring cookie")
	}
	c := int(le.Uint32(b[4:]))
	if c < 1 || c > 1<<16 || (len(b)-8)/8 < c {
		return 0, fmt.Errorf("bitmap of %d bytes cannot hold %d containers", len(b), c)
	}
	off, sum, prev := 8+8*c, 0, -1
	for i := range c {
		key := int(le.Uint16(b[8+4*i:]))
		cc := int(le.Uint16(b[10+4*i:])) + 1
		if key <= prev || uint32(key) > (n-1)>>16 {
			return 0, fmt.Errorf("bitmap container %d has key %d after %d (docs < %d)", i, key, prev, n)
		}
		if got := int(le.Uint32(b[8+4*c+4*i:])); got != off {
			return 0, fmt.Errorf("bitmap container %d at offset %d, want %d", i, got, off)
		}
		prev, sum, off = key, sum+cc, off+containerBytes(cc)
	}
	if sum != card || off != len(b) {
		return 0, fmt.Errorf("bitmap holds %d values in %d bytes, want %d values in %d bytes", sum, off, card, len(b))
	}
	return c, nil
}

// container returns the key (shifted into place), cardinality and bytes of
// container i of a bitmap checked by checkBitmap.
func container(b []byte, c, i int) (key uint32, card int, data []byte) {
	key = uint32(le.Uint16(b[8+4*i:])) << 16
	card = int(le.Uint16(b[10+4*i:])) + 1
	off := int(le.Uint32(b[8+4*c+4*i:]))
	return key, card, b[off : off+containerBytes(card)]
}
