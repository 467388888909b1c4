package pack

import (
	"math/bits"
	"unicode/utf8"
)

// Redundancy compares shingles: the word 3-grams of a text (its only
// shingle is the whole word sequence when it has fewer than three words),
// each hashed to 64 bits, as a set.

// Shingles hash words with a rotate-and-xor hash: it has no multiplication
// chain per byte, so it hashes as fast as the words can be scanned; shingle
// mixes the three word hashes once.
const wordSeed = 0x243f6a8885a308d3

// wordStep adds the byte c to a word hash.
func wordStep(h uint64, c byte) uint64 { return bits.RotateLeft64(h, 7) ^ uint64(c) }

// wordHash returns the shingle hash of a lowercased word.
func wordHash(w []byte) uint64 {
	h := uint64(wordSeed)
	for _, c := range w {
		h = wordStep(h, c)
	}
	return h ^ uint64(len(w))<<57
}

// nextWordHash finds the first word of s at or after byte i, like
// nextWord, and returns wordHash of it (lowercased) and the offset after
// it; ok is false when s has no further word. ASCII words are hashed as
// they are scanned; others go through nextWord.
func nextWordHash(s string, i int, buf []byte) (h uint64, end int, ok bool) {
	i = skipNonWord(s, i)
	if i == len(s) {
		return 0, i, false
	}
	start := i
	h = wordSeed
	for i < len(s) {
		c := s[i]
		if c >= utf8.RuneSelf || c == '\'' {
			w, _, end := nextWord(s, start, buf)
			return wordHash(w), end, true
		}
		l := asciiWord[c]
		if l == 0 {
			break
		}
		h = wordStep(h, l)
		i++
	}
	return h ^ uint64(i-start)<<57, i, true
}

// appendShingles appends the shingle hashes of s to dst, in text order and
// with repeats.
func appendShingles(dst []uint64, s string) []uint64 {
	var buf [64]byte
	var h1, h2 uint64
	n := 0
	for i := 0; ; {
		h, end, ok := nextWordHash(s, i, buf[:0])
		if !ok {
			break
		}
		if n >= 2 {
			dst = append(dst, shingle(h1, h2, h))
		}
		h1, h2 = h2, h
		n++
		i = end
	}
	switch n {
	case 1:
		dst = append(dst, shingle(0, 1, h2))
	case 2:
		dst = append(dst, shingle(0, h1, h2))
	}
	return dst
}

// shingle combines three word hashes, in order, into one.
func shingle(a, b, c uint64) uint64 {
	return mix(a*0x9e3779b97f4a7c15 ^ b*0xc2b2ae3d27d4eb4f ^ c)
}

// mix is the SplitMix64 finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
