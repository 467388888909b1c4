package artifact

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
)

// A span's identity by content, shared by the engine (its search channels
// cut their top k by TieKey) and the packer (which breaks ties by TieKey and
// cites spans by SpanHash): both must compute the same bits, so they are
// defined once, here.

// castagnoli is the CRC-32C table, the checksum segments store for every span
// text, so the engine can key a segment's spans without reading their text.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// TieKey returns the key that orders spans equal on score: the big-endian
// CRC-32C (Castagnoli) of the UTF-8 text, then the timestamp (the artifact
// time, Unix microseconds) encoded so that newer sorts first, then four
// zero bytes; compared as bytes, ascending. TieKeyCRC is the same from a
// stored checksum.
func TieKey(text string, timestamp int64) [16]byte {
	return TieKeyCRC(crc32.Checksum([]byte(text), castagnoli), timestamp)
}

// TieKeyCRC is TieKey for a text whose CRC-32C is textCRC.
func TieKeyCRC(textCRC uint32, timestamp int64) [16]byte {
	var k [16]byte
	binary.BigEndian.PutUint32(k[0:], textCRC)
	// Flipping the sign bit orders int64 as uint64; inverting makes newer first.
	binary.BigEndian.PutUint64(k[4:], ^(uint64(timestamp) ^ 1<<63))
	return k
}

// SpanHash returns "sha256:" and the hex SHA-256 of the UTF-8 bytes of
// text: the content hash of a span, as citations and conflict claims carry
// it (not to be confused with ContentHash, an artifact's payload hash).
func SpanHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}
