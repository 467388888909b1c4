package cluster

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/wal"
)

func entries(sizes ...int) []wal.Entry {
	out := make([]wal.Entry, len(sizes))
	for i, n := range sizes {
		out[i] = wal.Entry{Type: uint8(1 + i%5), Payload: bytes.Repeat([]byte{byte('a' + i)}, n)}
	}
	return out
}

func sameEntries(t *testing.T, got, want []wal.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Type != want[i].Type || !bytes.Equal(got[i].Payload, want[i].Payload) {
			t.Fatalf("record %d: type %d, %d bytes; want type %d, %d bytes", i, got[i].Type, len(got[i].Payload), want[i].Type, len(want[i].Payload))
		}
	}
}

// TestMessageRoundTrip: a message decodes to the records it was made of,
// messageSize is its length, and damaged messages are refused.
func TestMessageRoundTrip(t *testing.T) {
	for _, sizes := range [][]int{{}, {0}, {1, 200, 0, 70000}} {
		es := entries(sizes...)
		b := encodeMessage(es)
		if len(b) != messageSize(es) {
			t.Fatalf("sizes %v: messageSize %d, message %d bytes", sizes, messageSize(es), len(b))
		}
		got, err := decodeMessage(b)
		if err != nil {
			t.Fatalf("sizes %v: %v", sizes, err)
		}
		sameEntries(t, got, es)
	}
	good := encodeMessage(entries(3, 4))
	for name, b := range map[string][]byte{
		"empty":         {},
		"truncated":     good[:len(good)-1],
		"trailing":      append(append([]byte{}, good...), 0),
		"count too big": {0xff, 0xff, 0x04},
		"bad length":    {1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		if _, err := decodeMessage(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestSplitEntries: a write larger than a message is cut between records
// into messages within the limit, in order; a record too large for any
// message is refused, naming its size.
func TestSplitEntries(t *testing.T) {
	es := entries(400, 400, 400, 50, 900, 10)
	const limit = 1000
	runs, err := splitEntries(es, limit)
	if err != nil {
		t.Fatal(err)
	}
	var joined []wal.Entry
	for _, r := range runs {
		if messageSize(r) > limit {
			t.Fatalf("a message of %d bytes, limit %d", messageSize(r), limit)
		}
		joined = append(joined, r...)
	}
	sameEntries(t, joined, es)
	if len(runs) < 3 {
		t.Fatalf("%d messages for %d bytes of records under a %d-byte limit", len(runs), messageSize(es), limit)
	}
	if runs, _ := splitEntries(es, 1<<20); len(runs) != 1 {
		t.Fatalf("a write within the limit was cut into %d messages", len(runs))
	}
	if _, err := splitEntries(entries(10, 2000), limit); err == nil || !strings.Contains(err.Error(), "2000 bytes") {
		t.Fatalf("a record larger than a message: %v", err)
	}
}

// TestMalformedMessageIsCorruption: a damaged stream message matches
// codec.ErrCorrupt, as every storage decoder's error does; so does one with
// a non-minimal varint (internal/varint's rule).
func TestMalformedMessageIsCorruption(t *testing.T) {
	for _, b := range [][]byte{{0xff}, {2, 1}, {1, 1, 0x7f}, {0x80, 0x00}, {1, 1, 0x80, 0x00}} {
		_, err := decodeMessage(b)
		if err == nil || !errors.Is(err, codec.ErrCorrupt) {
			t.Errorf("decodeMessage(%x) = %v, want a codec.ErrCorrupt", b, err)
		}
	}
}

// TestMessageID: the de-duplication ids are those of
// docs/format/cluster-message.md (pinned: a node of another version must
// give a retry the same id).
func TestMessageID(t *testing.T) {
	a := uuid.UUID{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	b := uuid.UUID{0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8, 0xf7, 0xf6, 0xf5, 0xf4, 0xf3, 0xf2, 0xf1, 0xf0}
	for _, tt := range []struct {
		w    engine.Write
		want string
	}{
		{engine.Write{Tenant: "t", Ingested: []engine.Ingested{{Workspace: "w", IdempotencyKey: "k1", ID: a}, {Workspace: "v", IdempotencyKey: "k2", ID: b}}},
			"ingest-keys:1526c8a7903fb0c990d29580a7ffc4789b4c0543652dca230b1bc5be0881081d"},
		{engine.Write{Tenant: "t", Ingested: []engine.Ingested{{Workspace: "w", IdempotencyKey: "k1", ID: a}, {Workspace: "v", ID: b}}},
			"ingest-ids:d8088b8336a83b8894e13f6155fc6b4cac13213c224de4df85bceb0df3ffd35a"},
		{engine.Write{Receipt: a}, "receipt:00010203-0405-0607-0809-0a0b0c0d0e0f"},
		{engine.Write{Entries: entries(3)}, ""},
	} {
		if got := messageID(tt.w); got != tt.want {
			t.Errorf("messageID(%+v) = %q, want %q", tt.w, got, tt.want)
		}
	}
}
