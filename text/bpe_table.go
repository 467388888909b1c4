package text

import (
	"fmt"
	"hash/maphash"
)

// noRank marks a byte string that is not a token.
const noRank = ^uint32(0)

// rankTable maps a token's bytes to its rank (its token id). It is an
// open-addressing hash table of packed uint64 entries pointing into one
// string holding all token bytes, so it holds no pointers for the garbage
// collector to scan and costs 8 bytes per slot (the table is kept at most
// half full). Lookups of byte pairs, the most frequent during merging, use
// a direct 64K table instead.
//
// Entry layout, 0 meaning an empty slot (tokens are never empty):
//
//	bits  0-23  offset of the token in blob
//	bits 24-31  length of the token
//	bits 32-49  rank
//	bits 50-63  tag: the top 14 bits of the key's hash
type rankTable struct {
	blob     string
	slots    []uint64
	mask     uint64
	seed     maphash.Seed
	maxLen   int
	byteRank [256]uint32
	pairRank []uint32 // [b0<<8|b1], noRank when the pair is not a token
}

const (
	tableMaxBlob = 1 << 24
	tableMaxRank = 1 << 18
	tagShift     = 50
)

// newRankTable indexes the tokens given by their offsets and lengths in
// blob; token i has rank i. Every single byte must be a token, as in all
// byte-level BPE vocabularies, so that any text can be encoded.
func newRankTable(blob string, offs []uint32, lens []uint8) (*rankTable, error) {
	n := len(offs)
	if n > tableMaxRank || len(blob) > tableMaxBlob {
		return nil, fmt.Errorf("vocabulary too large: %d tokens, %d bytes", n, len(blob))
	}
	size := 1
	for size < 2*n {
		size <<= 1
	}
	t := &rankTable{
		blob:     blob,
		slots:    make([]uint64, size),
		mask:     uint64(size - 1),
		seed:     maphash.MakeSeed(),
		pairRank: make([]uint32, 1<<16),
	}
	for i := range t.byteRank {
		t.byteRank[i] = noRank
	}
	for i := range t.pairRank {
		t.pairRank[i] = noRank
	}
	for rank := range n {
		off, l := offs[rank], int(lens[rank])
		tok := blob[off : int(off)+l]
		h := maphash.String(t.seed, tok)
		i := h & t.mask
		for t.slots[i] != 0 {
			if e := t.slots[i]; int(e>>24&0xff) == l && t.tokenAt(e) == tok {
				return nil, fmt.Errorf("token %q repeated", tok)
			}
			i = (i + 1) & t.mask
		}
		t.slots[i] = uint64(off) | uint64(l)<<24 | uint64(rank)<<32 | h>>tagShift<<tagShift
		t.maxLen = max(t.maxLen, l)
		switch l {
		case 1:
			t.byteRank[tok[0]] = uint32(rank)
		case 2:
			t.pairRank[int(tok[0])<<8|int(tok[1])] = uint32(rank)
		}
	}
	for b, r := range t.byteRank {
		if r == noRank {
			return nil, fmt.Errorf("byte %#02x is not a token", b)
		}
	}
	return t, nil
}

func (t *rankTable) tokenAt(e uint64) string {
	off := int(e & 0xffffff)
	return t.blob[off : off+int(e>>24&0xff)]
}

// rank returns the rank of the token s, or noRank.
func (t *rankTable) rank(s string) uint32 {
	if len(s) > t.maxLen || len(s) == 0 {
		return noRank
	}
	h := maphash.String(t.seed, s)
	tag := h >> tagShift
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i]
		if e == 0 {
			return noRank
		}
		if e>>tagShift == tag && int(e>>24&0xff) == len(s) {
			off := int(e & 0xffffff)
			if t.blob[off:off+len(s)] == s {
				return uint32(e >> 32 & (tableMaxRank - 1))
			}
		}
	}
}
