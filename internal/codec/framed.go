package codec

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeFramed frames a payload as a whole file: magic, a version byte, the
// CRC-32C (Castagnoli, little-endian) of the payload, then the payload
// (docs/format/manifest.md § CONTROL; CONTROL and CONTROL_PAYLOADS are
// framed so).
func EncodeFramed(magic []byte, version byte, payload []byte) []byte {
	b := make([]byte, 0, len(magic)+1+4+len(payload))
	b = append(b, magic...)
	b = append(b, version)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// DecodeFramed checks the frame EncodeFramed writes and returns the
// payload (aliasing b). Its errors name path and the offset of the fault,
// and match ErrCorrupt.
func DecodeFramed(path string, magic []byte, version byte, b []byte) ([]byte, error) {
	hdr := len(magic) + 1 + 4
	switch {
	case len(b) < hdr:
		return nil, Errorf("%s: %d bytes, shorter than the %d-byte header", path, len(b), hdr)
	case !bytes.Equal(b[:len(magic)], magic):
		return nil, Errorf("%s: offset 0: bad magic", path)
	case b[len(magic)] != version:
		return nil, Errorf("%s: offset %d: unsupported version %d", path, len(magic), b[len(magic)])
	}
	payload := b[hdr:]
	if got, want := crc32.Checksum(payload, castagnoli), binary.LittleEndian.Uint32(b[len(magic)+1:]); got != want {
		return nil, Errorf("%s: offset %d: checksum mismatch (stored %08x, computed %08x)", path, len(magic)+1, want, got)
	}
	return payload, nil
}
