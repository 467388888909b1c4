package cluster

import (
	"encoding/binary"
	"fmt"

	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/wal"
)

// A stream message carries the records of one write, in the engine's WAL
// record form (docs/format/wal.md: a type byte and a payload; byte-exact in
// docs/format/cluster-message.md):
//
//	message = uvarint(count) record*
//	record  = type:u8 uvarint(len) payload[len]
//
// Record i of the message at stream sequence n gets the engine sequence
// number n<<recordBits | i, so a message holds fewer than 1<<recordBits records.
const recordBits = 16

// maxRecords is the most records one message carries.
const maxRecords = 1<<recordBits - 1

// encodeMessage frames entries (their Apply functions stay behind).
func encodeMessage(entries []wal.Entry) []byte {
	n := binary.MaxVarintLen64
	for _, e := range entries {
		n += 1 + binary.MaxVarintLen64 + len(e.Payload)
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for _, e := range entries {
		b = append(b, e.Type)
		b = binary.AppendUvarint(b, uint64(len(e.Payload)))
		b = append(b, e.Payload...)
	}
	return b
}

// messageSize is len(encodeMessage(entries)) without encoding.
func messageSize(entries []wal.Entry) int {
	n := uvarintLen(uint64(len(entries)))
	for _, e := range entries {
		n += 1 + uvarintLen(uint64(len(e.Payload))) + len(e.Payload)
	}
	return n
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

var errMessage = codec.Sentinel("cluster: malformed message")

// decodeMessage parses a message (docs/format/cluster-message.md) into
// entries whose payloads alias b. Varints follow internal/varint's rule: a
// non-minimal one is refused, as in every storage format.
func decodeMessage(b []byte) ([]wal.Entry, error) {
	d := codec.Decoder{B: b, Fault: func(field string, at int, reason string) error {
		return fmt.Errorf("%w: %s at offset %d: %s", errMessage, field, at, reason)
	}}
	count := d.Count("record count", 2) // a record takes at least 2 bytes
	if d.Err == nil && count > maxRecords {
		d.Failf("record count", 0, "%d records, at most %d", count, maxRecords)
	}
	entries := make([]wal.Entry, 0, count)
	for i := 0; i < count && d.Err == nil; i++ {
		t := d.Byte("record type")
		p := d.Bytes("record payload")
		entries = append(entries, wal.Entry{Type: t, Payload: p[:len(p):len(p)]})
	}
	d.End("message")
	if d.Err != nil {
		return nil, d.Err
	}
	return entries, nil
}

// splitEntries cuts entries into runs whose messages are at most limit
// bytes and hold at most maxRecords records each. A record too large for a
// message of its own is an error naming its size.
func splitEntries(entries []wal.Entry, limit int) ([][]wal.Entry, error) {
	if messageSize(entries) <= limit && len(entries) <= maxRecords {
		return [][]wal.Entry{entries}, nil
	}
	var runs [][]wal.Entry
	start, size := 0, binary.MaxVarintLen32
	for i, e := range entries {
		rec := 1 + uvarintLen(uint64(len(e.Payload))) + len(e.Payload)
		if binary.MaxVarintLen32+rec > limit {
			return nil, fmt.Errorf("a record of %d bytes exceeds the cluster's largest message (%d bytes, nats-server max_payload)", len(e.Payload), limit)
		}
		if i > start && (size+rec > limit || i-start == maxRecords) {
			runs = append(runs, entries[start:i])
			start, size = i, binary.MaxVarintLen32
		}
		size += rec
	}
	return append(runs, entries[start:]), nil
}
