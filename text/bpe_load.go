package text

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// The vocabularies are generated from OpenAI's rank files by
// internal/bpegen (its own module, so its source is no dependency here),
// which also writes their SHA-256 sums to bpe_sums.go. Format:
// docs/format/bpe.md.
//
//go:generate go -C internal/bpegen run . -out ../../bpe_data -sums ../../bpe_sums.go

// bpeMagic and bpeVersion open every vocabulary file's payload.
const (
	bpeMagic   = "LOCI-BPE"
	bpeVersion = 1
)

// loadRankTable checks the embedded file against its SHA-256 sum,
// decompresses it and indexes its tokens.
func loadRankTable(name string, file []byte, sum string) (*rankTable, error) {
	if got := sha256.Sum256(file); hex.EncodeToString(got[:]) != sum {
		return nil, fmt.Errorf("text: %s vocabulary damaged: SHA-256 %x, want %s", name, got, sum)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	payload, err := dec.DecodeAll(file, nil)
	if err != nil {
		return nil, fmt.Errorf("text: %s vocabulary: %w", name, err)
	}
	t, err := parseVocabulary(name, string(payload))
	if err != nil {
		return nil, fmt.Errorf("text: %s vocabulary: %w", name, err)
	}
	initBMPClass()
	return t, nil
}

// parseVocabulary reads a decompressed payload: the header, then each token
// as a one-byte length and its bytes, in rank order. The tokens stay in the
// payload, which becomes the table's blob.
func parseVocabulary(name, p string) (*rankTable, error) {
	errShort := errors.New("truncated")
	if len(p) < len(bpeMagic)+4+1 || p[:len(bpeMagic)] != bpeMagic {
		return nil, errors.New("bad magic")
	}
	at := len(bpeMagic)
	if v := binary.LittleEndian.Uint32([]byte(p[at : at+4])); v != bpeVersion {
		return nil, fmt.Errorf("version %d, want %d", v, bpeVersion)
	}
	at += 4
	nameLen := int(p[at])
	at++
	if len(p) < at+nameLen+4 {
		return nil, errShort
	}
	if got := p[at : at+nameLen]; got != name {
		return nil, fmt.Errorf("holds %q", got)
	}
	at += nameLen
	count := int(binary.LittleEndian.Uint32([]byte(p[at : at+4])))
	at += 4
	if count > len(p)-at {
		return nil, errShort
	}
	offs := make([]uint32, count)
	lens := make([]uint8, count)
	for i := range count {
		if at >= len(p) {
			return nil, errShort
		}
		l := int(p[at])
		at++
		if l == 0 || at+l > len(p) {
			return nil, fmt.Errorf("token %d: bad length %d", i, l)
		}
		offs[i], lens[i] = uint32(at), uint8(l)
		at += l
	}
	if at != len(p) {
		return nil, fmt.Errorf("%d bytes after the last token", len(p)-at)
	}
	return newRankTable(p, offs, lens)
}
