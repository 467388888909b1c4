package record

import (
	"encoding/binary"

	"github.com/loci-memory/loci/internal/codec"
)

// Event sections of a segment (FEEDBACK, RECEIPTS; docs/format/segment.md)
// frame their records the same way: u32 count, then per record u64 seq,
// u32 length and the record's bytes; seqs strictly increase.

// SeqFrame locates one framed record in a section.
type SeqFrame struct {
	Seq      uint64
	Off, Len int
}

// AppendSeqFrame appends one framed record to an event section.
func AppendSeqFrame(b []byte, seq uint64, rec []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec)))
	return append(b, rec...)
}

// SeqFrames checks the framing of an event section and returns its frames
// and the bytes after them; what names the section in errors.
func SeqFrames(b []byte, what string) ([]SeqFrame, []byte, error) {
	if len(b) < 4 {
		return nil, nil, codec.Errorf("%s: %d bytes, want at least 4", what, len(b))
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4)/12 {
		return nil, nil, codec.Errorf("%s: count %d exceeds its size", what, n)
	}
	frames := make([]SeqFrame, 0, n)
	at := 4
	var prev uint64
	for i := uint32(0); i < n; i++ {
		if len(b)-at < 12 {
			return nil, nil, codec.Errorf("%s: record %d truncated", what, i)
		}
		seq, l := binary.LittleEndian.Uint64(b[at:]), int(binary.LittleEndian.Uint32(b[at+8:]))
		at += 12
		if l > len(b)-at || seq <= prev {
			return nil, nil, codec.Errorf("%s: record %d: bad length %d or seq %d after %d", what, i, l, seq, prev)
		}
		frames = append(frames, SeqFrame{seq, at, l})
		prev = seq
		at += l
	}
	return frames, b[at:], nil
}

// FirstSeq returns the seq of an event section's first (lowest) record,
// read from its first frame without checking the rest; ok is false when
// the section has no record.
func FirstSeq(b []byte) (seq uint64, ok bool) {
	if len(b) < 12 || binary.LittleEndian.Uint32(b) == 0 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[4:]), true
}

// A FEEDBACK section (segment kind 48) holds a workspace's feedback events in
// sequence order: u32 count, then per event u64 seq, u32 length and the
// event in the WAL record encoding (docs/format/wal.md, type 16).
func EncodeFeedbackSection(events []*Feedback) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(events)))
	for _, e := range events {
		b = AppendSeqFrame(b, e.Seq, EncodeFeedback(e))
	}
	return b
}

// DecodeFeedbackSection decodes a FEEDBACK section, each event's Seq set
// from its frame.
func DecodeFeedbackSection(b []byte) ([]*Feedback, error) {
	frames, rest, err := SeqFrames(b, "feedback section")
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, codec.Errorf("feedback section: %d trailing bytes", len(rest))
	}
	out := make([]*Feedback, len(frames))
	for i, f := range frames {
		if out[i], err = DecodeFeedback(b[f.Off : f.Off+f.Len]); err != nil {
			return nil, codec.Errorf("feedback section: event %d: %w", i, err)
		}
		out[i].Seq = f.Seq
	}
	return out, nil
}
