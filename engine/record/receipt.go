package record

import (
	"bytes"
	"encoding/binary"
	"math"
	"sort"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/internal/codec"
)

// ReceiptVersion is the leading byte of receipt records written now: the
// body is zstd-compressed. Version 1 (Version), with the body as is, is
// still read.
const ReceiptVersion byte = 2

// MaxReceiptBody bounds a receipt body, decompressed, and so the offsets
// and lengths of its cuts.
const MaxReceiptBody = 64 << 20

// Receipt is a receipt record (TypeReceipt): a decision receipt's summary
// fields, its cuts and its body, which the engine stores without looking
// inside it.
type Receipt struct {
	ID          uuid.UUID
	Tenant      string
	Workspace   string
	Query       string
	ActorID     string
	PackHash    string
	Timestamp   int64 // Unix µs
	Confidence  float64
	Abstain     bool
	TotalTokens int
	Cuts        []ReceiptCut
	// Body is the receipt body: zstd-compressed when Compressed (always, in
	// the records written now), as is in a version 1 record.
	Body       []byte
	Compressed bool
	// Seq is the record's WAL sequence number: not part of the payload (the
	// log, or a segment's section frame, carries it).
	Seq uint64
}

// ReceiptCut is a part left out of a stored receipt body: At is the offset
// of its two-byte placeholder in the body, Len the length in bytes of what
// was left out. Placeholders do not overlap: each At is at least the
// previous At plus 2.
type ReceiptCut struct{ At, Len int }

// EncodeReceipt: version 2 | 16 id | tenant | workspace | query | actor |
// pack hash | varint timestamp | f64 confidence | abstain byte | uvarint
// total tokens | uvarint cut count | per cut uvarint offset (from the
// previous cut's offset) and uvarint length | body compressed with zstd
// (uvarint length + bytes). r.Body must be compressed.
func EncodeReceipt(r *Receipt) []byte {
	b := []byte{ReceiptVersion}
	b = append(b, r.ID[:]...)
	for _, s := range []string{r.Tenant, r.Workspace, r.Query, r.ActorID, r.PackHash} {
		b = codec.AppendString(b, s)
	}
	b = binary.AppendVarint(b, r.Timestamp)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Confidence))
	abstain := byte(0)
	if r.Abstain {
		abstain = 1
	}
	b = append(b, abstain)
	b = binary.AppendUvarint(b, uint64(r.TotalTokens))
	b = binary.AppendUvarint(b, uint64(len(r.Cuts)))
	prev := 0
	for _, c := range r.Cuts {
		b = binary.AppendUvarint(b, uint64(c.At-prev))
		b = binary.AppendUvarint(b, uint64(c.Len))
		prev = c.At
	}
	b = binary.AppendUvarint(b, uint64(len(r.Body)))
	return append(b, r.Body...)
}

// DecodeReceipt decodes a receipt record of either version; withBody false
// leaves Cuts and Body out. Body aliases b. The compressed body is not
// checked here: its reader decompresses it.
func DecodeReceipt(b []byte, withBody bool) (*Receipt, error) {
	if len(b) == 0 || b[0] != Version && b[0] != ReceiptVersion {
		return nil, codec.Errorf("receipt record: unsupported version")
	}
	version := b[0]
	d := codec.Decoder{B: b[1:]}
	r := &Receipt{}
	r.ID = d.UUID("")
	r.Tenant, r.Workspace, r.Query, r.ActorID, r.PackHash = d.Str(""), d.Str(""), d.Str(""), d.Str(""), d.Str("")
	r.Timestamp = d.Varint("")
	if d.Err == nil && d.Remaining() < 9 {
		d.Failf("", d.Off, "short confidence")
	}
	if d.Err == nil {
		r.Confidence = math.Float64frombits(binary.LittleEndian.Uint64(d.Rest()))
		switch d.Rest()[8] {
		case 0:
		case 1:
			r.Abstain = true
		default:
			d.Failf("", d.Off, "bad abstain byte")
		}
		d.Off += 9
	}
	r.TotalTokens = int(d.Uvarint(""))
	if version == ReceiptVersion {
		n := d.Uvarint("")
		if d.Err == nil && n > uint64(d.Remaining())/2 {
			d.Failf("", d.Off, "bad preview cut count")
		}
		at := 0
		for i := uint64(0); i < n && d.Err == nil; i++ {
			delta, length := d.Uvarint(""), d.Uvarint("")
			if delta > MaxReceiptBody || length > MaxReceiptBody || i > 0 && delta < 2 {
				d.Failf("", d.Off, "bad preview cut")
			}
			at += int(delta)
			if withBody {
				r.Cuts = append(r.Cuts, ReceiptCut{At: at, Len: int(length)})
			}
		}
	}
	if body := d.Bytes(""); withBody && d.Err == nil {
		r.Body, r.Compressed = body, version == ReceiptVersion
	}
	if d.Err == nil && d.Remaining() != 0 {
		d.Failf("", d.Off, "trailing bytes")
	}
	if d.Err != nil {
		return nil, codec.Errorf("receipt record: %w", d.Err)
	}
	return r, nil
}

// A RECEIPTS section (segment kind 49) holds a workspace's receipts in
// sequence order: u32 count, then per receipt u64 seq, u32 length and the
// receipt in the WAL record encoding (type 17), then count u32 row numbers
// ordering the receipts by id, for lookup.
//
// Receipts are in the record encoding, so a compacted section copies their
// compressed bodies without recompressing them.
func EncodeReceiptSection(rs []*Receipt) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(rs)))
	for _, r := range rs {
		b = AppendSeqFrame(b, r.Seq, EncodeReceipt(r))
	}
	byID := make([]uint32, len(rs))
	for i := range byID {
		byID[i] = uint32(i)
	}
	sort.Slice(byID, func(i, j int) bool { return bytes.Compare(rs[byID[i]].ID[:], rs[byID[j]].ID[:]) < 0 })
	for _, i := range byID {
		b = binary.LittleEndian.AppendUint32(b, i)
	}
	return b
}

// DecodeReceiptSection decodes a RECEIPTS section, bodies included. The
// receipts' bodies alias b: a compaction copies them into its output while
// its input segments are still mapped, without holding a second copy of
// every body.
func DecodeReceiptSection(b []byte) ([]*Receipt, error) {
	rows, err := ReceiptRows(b)
	if err != nil {
		return nil, err
	}
	out := make([]*Receipt, len(rows))
	for i, row := range rows {
		if out[i], err = DecodeReceipt(b[row.Off:row.Off+row.Len], true); err != nil {
			return nil, codec.Errorf("receipts section: receipt %d: %w", i, err)
		}
		out[i].Seq = row.Seq
	}
	table := b[len(b)-4*len(rows):]
	for i := range rows {
		row := binary.LittleEndian.Uint32(table[4*i:])
		if int(row) >= len(rows) || i > 0 && bytes.Compare(out[binary.LittleEndian.Uint32(table[4*(i-1):])].ID[:], out[row].ID[:]) >= 0 {
			return nil, codec.Errorf("receipts section: id order table entry %d is wrong", i)
		}
	}
	return out, nil
}

// ReceiptRows checks a RECEIPTS section's framing and returns its rows.
func ReceiptRows(b []byte) ([]SeqFrame, error) {
	rows, rest, err := SeqFrames(b, "receipts section")
	if err != nil {
		return nil, err
	}
	if len(rest) != 4*len(rows) {
		return nil, codec.Errorf("receipts section: id order table is %d bytes, want %d", len(rest), 4*len(rows))
	}
	return rows, nil
}
