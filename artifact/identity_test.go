package artifact

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
)

func TestTieKey(t *testing.T) {
	const ts = 1_700_000_000_000_000
	crc := func(s string) uint32 { return crc32.Checksum([]byte(s), crc32.MakeTable(crc32.Castagnoli)) }
	for _, tc := range []struct {
		name       string
		a, b       [16]byte
		wantBefore bool // a sorts before b
	}{
		{"same text: newer first", TieKey("x", ts+1), TieKey("x", ts), true},
		{"same text: older after", TieKey("x", ts-1), TieKey("x", ts), false},
		{"negative times: newer first", TieKey("x", -1), TieKey("x", -2), true},
		{"time across zero", TieKey("x", 1), TieKey("x", -1), true},
		{"text checksum before time", TieKey("a", ts), TieKey("b", 0), crc("a") < crc("b")},
	} {
		if got := bytes.Compare(tc.a[:], tc.b[:]) < 0; got != tc.wantBefore {
			t.Errorf("%s: a before b = %v, want %v", tc.name, got, tc.wantBefore)
		}
	}
	for _, s := range []string{"", "The refund window is 30 days.", "東京 🙂"} {
		k := TieKey(s, ts)
		if got := binary.BigEndian.Uint32(k[:4]); got != crc(s) {
			t.Errorf("TieKey(%q) starts with %#x, want its CRC-32C %#x", s, got, crc(s))
		}
		if k != TieKeyCRC(crc(s), ts) {
			t.Errorf("TieKey(%q) != TieKeyCRC of its checksum", s)
		}
		if !bytes.Equal(k[12:], make([]byte, 4)) {
			t.Errorf("TieKey(%q) ends with %x, want zeros", s, k[12:])
		}
	}
}

func TestSpanHash(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	}
	for _, tt := range tests {
		if got := SpanHash(tt.in); got != tt.want {
			t.Errorf("SpanHash(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
