package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	tests := []struct {
		typ  uint8
		seq  uint64
		size int
	}{
		{1, 1, 0},
		{2, 2, 1},
		{255, 1 << 40, 17},
		{7, ^uint64(0), 4096},
		{3, 12345, 1 << 20},
	}
	for _, tt := range tests {
		payload := payloadFor(tt.seq, tt.size)
		frame := appendRecord([]byte("prefix"), tt.typ, tt.seq, payload)[len("prefix"):]
		if len(frame) != recordHeaderSize+tt.size {
			t.Fatalf("size %d: frame is %d bytes, want %d", tt.size, len(frame), recordHeaderSize+tt.size)
		}
		// Trailing bytes after the frame must not matter.
		for _, b := range [][]byte{frame, append(bytes.Clone(frame), 0xde, 0xad)} {
			rec, n, err := DecodeRecord(b)
			if err != nil {
				t.Fatalf("size %d: DecodeRecord: %v", tt.size, err)
			}
			if n != len(frame) || rec.Type != tt.typ || rec.Seq != tt.seq || !bytes.Equal(rec.Payload, payload) {
				t.Fatalf("size %d: got n=%d %s, want n=%d type %d seq %d", tt.size, n, describe(rec), len(frame), tt.typ, tt.seq)
			}
		}
	}
}

// frameWith builds a frame with a correct crc over whatever fields it is
// given, to reach the checks behind the crc.
func frameWith(length uint32, typ uint8, seq uint64, payload []byte) []byte {
	b := make([]byte, recordHeaderSize, recordHeaderSize+len(payload))
	binary.LittleEndian.PutUint32(b[0:4], length)
	b[8] = typ
	binary.LittleEndian.PutUint64(b[9:17], seq)
	binary.LittleEndian.PutUint32(b[4:8], frameCRC(b, payload))
	return append(b, payload...)
}

func TestDecodeRecordErrors(t *testing.T) {
	valid := appendRecord(nil, 1, 9, []byte("hello"))
	flip := func(i int) []byte {
		b := bytes.Clone(valid)
		b[i] ^= 0x10
		return b
	}
	tests := []struct {
		name   string
		b      []byte
		short  bool   // want ErrShort
		reason string // else want a *CorruptionError with this in its reason
	}{
		{"empty", nil, true, ""},
		{"header cut", valid[:recordHeaderSize-1], true, ""},
		{"payload cut", valid[:len(valid)-1], true, ""},
		{"header only", valid[:recordHeaderSize], true, ""},
		{"length over max", frameWith(MaxPayload+1, 1, 1, nil), false, "exceeds maximum"},
		{"length max, short", frameWith(MaxPayload, 1, 1, nil), true, ""},
		{"type 0", frameWith(0, 0, 1, nil), false, "type 0"},
		{"zeros", make([]byte, 64), false, "checksum"},
		{"crc flipped", flip(5), false, "checksum"},
		{"type flipped", flip(8), false, "checksum"},
		{"seq flipped", flip(12), false, "checksum"},
		{"payload flipped", flip(recordHeaderSize + 2), false, "checksum"},
		{"length flipped", flip(0), true, ""}, // claims 16+5 bytes
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, n, err := DecodeRecord(tt.b)
			if n != 0 || rec.Payload != nil {
				t.Errorf("got n=%d %s with error %v, want zero values", n, describe(rec), err)
			}
			if tt.short {
				if err != ErrShort {
					t.Fatalf("got %v, want ErrShort", err)
				}
				return
			}
			var ce *CorruptionError
			if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tt.reason) {
				t.Fatalf("got %v, want corruption with %q", err, tt.reason)
			}
			if errors.Is(err, ErrShort) {
				t.Fatalf("corruption %v claims to be short", err)
			}
		})
	}
}

// TestDecodeRecordEveryBitFlip checks that no single-bit flip anywhere in a
// frame decodes as a record.
func TestDecodeRecordEveryBitFlip(t *testing.T) {
	valid := appendRecord(nil, 4, 77, []byte("a payload of some length"))
	for i := range len(valid) * 8 {
		b := bytes.Clone(valid)
		b[i/8] ^= 1 << (i % 8)
		if rec, _, err := DecodeRecord(b); err == nil {
			t.Fatalf("bit %d flipped: decoded %s", i, describe(rec))
		}
	}
}

func TestDecodeRecordRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	valid := appendRecord(nil, 1, 1, []byte("0123456789"))
	buf := make([]byte, 0, 256)
	for i := range 100000 {
		buf = buf[:rng.IntN(cap(buf))]
		for j := range buf {
			buf[j] = byte(rng.Uint32())
		}
		if i%2 == 0 {
			// Keep a plausible header so the deeper checks are reached.
			copy(buf, valid[:min(len(buf), 4+rng.IntN(recordHeaderSize-4))])
		}
		rec, n, err := DecodeRecord(buf)
		if err != nil {
			if n != 0 {
				t.Fatalf("input %x: n=%d with error %v", buf, n, err)
			}
			continue
		}
		if again := appendRecord(nil, rec.Type, rec.Seq, rec.Payload); !bytes.Equal(again, buf[:n]) {
			t.Fatalf("input %x: decoded %s re-encodes as %x", buf, describe(rec), again)
		}
	}
}

func TestDecodeRecordAllocs(t *testing.T) {
	valid := appendRecord(nil, 1, 1, make([]byte, 1000))
	huge := frameWith(MaxPayload, 1, 1, nil) // claims 64 MiB, has none
	for _, b := range [][]byte{valid, huge, valid[:10]} {
		if n := testing.AllocsPerRun(100, func() { DecodeRecord(b) }); n != 0 {
			t.Errorf("DecodeRecord of %d bytes: %v allocations, want 0", len(b), n)
		}
	}
}

func TestCorruptionError(t *testing.T) {
	tests := []struct {
		err  *CorruptionError
		want string
	}{
		{&CorruptionError{File: "/d/00000003.wal", Offset: 42, Reason: "checksum mismatch"},
			"wal: /d/00000003.wal at offset 42: checksum mismatch"},
		{&CorruptionError{Reason: "invalid record type 0"}, "wal: record at offset 0: invalid record type 0"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// TestRecordGolden pins the byte layout documented in docs/format/wal.md.
func TestRecordGolden(t *testing.T) {
	want := []byte{
		0x02, 0x00, 0x00, 0x00, // length
		0x66, 0x0c, 0xc8, 0xc4, // crc
		0x01,                                           // type
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // seq
		'h', 'i',
	}
	if got := appendRecord(nil, 1, 1, []byte("hi")); !bytes.Equal(got, want) {
		t.Fatalf("frame = % x, want % x", got, want)
	}
	if got := fileHeader(); string(got) != "LOCIWAL\x01" {
		t.Fatalf("file header = %q", got)
	}
}
