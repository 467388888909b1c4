// Package segment implements Loci's immutable segment files: one file holds the
// artifacts and spans of one or more workspaces, is written once (atomically),
// and is read through a read-only memory map.
//
// The format is specified byte by byte in docs/format/segment.md. In short:
//
//	header   "LOCISEG" 0x01                      8 bytes
//	section  ... each at an 8-byte aligned offset, zero padding between
//	TOC      count, then one 32-byte entry per section
//	footer   TOC location and checksum, segment id, version, "LOCISEGF"  40 bytes
//
// Every byte of a file is covered by a CRC-32C checksum, the magic strings or
// the zero-padding rule, so any corruption is found by Open or Verify.
package segment

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/loci-memory/loci/internal/codec"
)

// Layout constants. All integers are little endian.
const (
	headerMagic = "LOCISEG"
	// FormatVersion is the version byte of the header and the version field of
	// the footer.
	FormatVersion = 1
	headerSize    = 8

	footerMagic = "LOCISEGF"
	footerSize  = 40
	// Footer field offsets, relative to the footer start.
	ftTOCOffset = 0  // u64
	ftSegmentID = 8  // u64
	ftTOCLength = 16 // u32
	ftTOCCRC    = 20 // u32
	ftVersion   = 24 // u32
	ftCRC       = 28 // u32, CRC-32C of footer bytes [0, 28)
	ftMagic     = 32 // 8 bytes

	tocHeaderSize = 8  // count u32, reserved u32
	tocEntrySize  = 32 // kind u16, flags u16, ws u32, offset u64, length u64, crc u32, reserved u32

	// minFileSize is a header, an empty TOC and a footer.
	minFileSize = headerSize + tocHeaderSize + footerSize

	// allWorkspaces is the workspace index of segment-wide sections.
	allWorkspaces = 0xFFFFFFFF
)

// Section kinds. Numbers are never reused; readers skip kinds they do not know
// (after bounds checks, and a checksum check unless flagDeferredCRC is set), so
// later versions can add sections without breaking older readers.
const (
	KindWorkspaces      uint16 = 1 // segment-wide: workspace directory
	KindArtifactIDIndex uint16 = 2 // segment-wide: sorted artifact ids -> (ws, ordinal, seq)
	KindState           uint16 = 3 // segment-wide, reserved

	KindArtifacts     uint16 = 16 // per workspace: artifact entries (bulk, per-entry checksums)
	KindArtifactTable uint16 = 17 // per workspace: one fixed-width row per artifact
	KindIdempotency   uint16 = 18 // per workspace: sorted idempotency keys -> ordinal
	KindSpans         uint16 = 19 // per workspace: one fixed-width row per span
	KindSpanText      uint16 = 20 // per workspace: span text blob (bulk, per-span checksums)

	KindPostings     uint16 = 32 // per workspace, extension: BM25 postings (invindex)
	KindTermDict     uint16 = 33 // per workspace, extension: term dictionary (invindex)
	KindDocLengths   uint16 = 34 // per workspace, extension: document lengths (invindex)
	KindVectors      uint16 = 35 // per workspace, extension: int8 vectors (vecindex)
	KindArtifactMeta uint16 = 36 // per workspace, optional: artifacts without payloads (packing)

	KindFeedback uint16 = 48 // per workspace, extension: feedback events (engine)
	KindReceipts uint16 = 49 // per workspace, extension: receipts (engine)
)

// Section flags (TOC entry flags field).
const (
	// flagDeferredCRC marks a bulk section whose contents carry their own
	// per-entry checksums: Open does not checksum the whole section (it would
	// read the whole file), Verify does.
	flagDeferredCRC uint16 = 1 << 0
	knownFlags             = flagDeferredCRC
)

// Fixed-width rows.
const (
	// Artifact table row: id [16], seq u64, entry offset u64 (relative to the
	// ARTIFACTS section), first span u32 (index into SPANS), span count u32.
	artRowSize   = 40
	artRowSeq    = 16
	artRowEntry  = 24
	artRowFirst  = 32
	artRowNSpans = 36

	// Artifact entry header: crc32c u32 (of the rest of the entry), stored
	// length u32, raw length u32, flags u8; the body follows.
	entryHeaderSize = 13
	entryFlagZstd   = 1 << 0

	// Span row: id [16], artifact ordinal u32, ordinal u32, start u32, end u32,
	// tokens u32, text length u32, timestamp i64, text offset u64 (relative
	// to SPAN_TEXT), text crc32c u32, reserved u32.
	spanRowSize    = 64
	spanRowArt     = 16
	spanRowOrdinal = 20
	spanRowStart   = 24
	spanRowEnd     = 28
	spanRowTokens  = 32
	spanRowTextLen = 36
	spanRowTime    = 40
	spanRowTextOff = 48
	spanRowTextCRC = 56

	// ID index row: id [16], ws u32, ordinal u32, seq u64.
	idRowSize = 32

	// Idempotency section: count u32, reserved u32, count rows of
	// {ordinal u32, key length u32, key offset u64 (relative to the key blob)},
	// then the key blob.
	idemHeaderSize = 8
	idemRowSize    = 16

	// Workspaces section: count u32, reserved u32, then per workspace
	// tenant length u32, tenant, workspace length u32, workspace,
	// artifacts u32, spans u32, min seq u64, max seq u64.
	wsHeaderSize   = 8
	wsEntryMinSize = 4 + 4 + 4 + 4 + 8 + 8
)

// maxZstdEntry bounds the raw size of a compressed artifact entry. Larger
// entries are stored uncompressed, so a reader never inflates more than this
// from a (possibly hostile) zstd frame.
const maxZstdEntry = 32 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ExtensionKind reports whether kind is a per-workspace section kind that
// callers supply through WorkspaceData.Sections: the retrieval kinds
// (32-47) and the workspace-event kinds (48-63).
func ExtensionKind(kind uint16) bool { return kind >= 32 && kind < 64 }

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

var le = binary.LittleEndian

func align8(n uint64) uint64 { return (n + 7) &^ 7 }

// CorruptionError reports a malformed segment: which file, the absolute byte
// offset of the faulty structure, and what is wrong.
type CorruptionError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("segment %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Is reports a CorruptionError as corruption: errors.Is(err, codec.ErrCorrupt).
func (e *CorruptionError) Is(target error) bool { return target == codec.ErrCorrupt }

func kindName(k uint16) string {
	switch k {
	case KindWorkspaces:
		return "WORKSPACES"
	case KindArtifactIDIndex:
		return "ARTIFACT_ID_INDEX"
	case KindState:
		return "STATE"
	case KindArtifacts:
		return "ARTIFACTS"
	case KindArtifactTable:
		return "ARTIFACT_TABLE"
	case KindIdempotency:
		return "IDEMPOTENCY"
	case KindSpans:
		return "SPANS"
	case KindSpanText:
		return "SPAN_TEXT"
	case KindPostings:
		return "POSTINGS"
	case KindTermDict:
		return "TERM_DICT"
	case KindDocLengths:
		return "DOC_LENGTHS"
	case KindVectors:
		return "VECTORS"
	case KindArtifactMeta:
		return "ARTIFACT_META"
	case KindFeedback:
		return "FEEDBACK"
	case KindReceipts:
		return "RECEIPTS"
	}
	return fmt.Sprintf("kind %d", k)
}

// FileName returns the name of segment id's file inside a data directory.
func FileName(id uint64) string { return fmt.Sprintf("%016d.seg", id) }
