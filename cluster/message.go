package cluster

import (
	"encoding/binary"
	"fmt"

	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/wal"
)

// A stream message carries the records of one write, in the engine's WAL
// record form (docs/format/wal.md: a type byte and a payload):
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

// decodeMessage parses a message into entries whose payloads alias b.
func decodeMessage(b []byte) ([]wal.Entry, error) {
	count, k := binary.Uvarint(b)
	if k <= 0 || count > maxRecords {
		return nil, fmt.Errorf("%w: bad record count", errMessage)
	}
	b = b[k:]
	entries := make([]wal.Entry, 0, count)
	for i := uint64(0); i < count; i++ {
		if len(b) < 2 {
			return nil, fmt.Errorf("%w: record %d truncated", errMessage, i)
		}
		t := b[0]
		l, k := binary.Uvarint(b[1:])
		if k <= 0 || l > uint64(len(b)-1-k) {
			return nil, fmt.Errorf("%w: record %d: bad length", errMessage, i)
		}
		start := 1 + k
		entries = append(entries, wal.Entry{Type: t, Payload: b[start : start+int(l) : start+int(l)]})
		b = b[start+int(l):]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last record", errMessage, len(b))
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
