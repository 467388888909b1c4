package artifact

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/loci-memory/loci/internal/codec"
)

// The binary encoding of artifacts and spans, shared by WAL records and segment
// files. It is documented byte by byte in docs/format/segment.md.
//
// An encoding starts with a version byte, then every field in a fixed order:
//
//	uint    uvarint (minimal: a final 0x00 byte after the first is an error;
//	        see package internal/varint)
//	int64   zigzag varint (binary.AppendVarint), minimal as above
//	string  uvarint byte length, then the bytes
//	[]byte  same as string
//	[]string uvarint count, then each string
//	uuid    16 raw bytes
//	hash    32 raw bytes
//	bool    one byte, 0 or 1; any other value is an error
//
// Empty and nil slices encode the same way and decode as nil.
//
// An artifact with metadata is written with version byte 2: the fields of
// version 1, then the metadata as a uvarint count (at least 1) and that many
// key and value strings, keys in strictly ascending byte order. An artifact
// without metadata is written with version byte 1 exactly as before, so
// every encoding stays canonical and data written before metadata existed
// decodes (and re-encodes) unchanged.

const (
	// ArtifactEncodingVersion is the first byte of an encoded Artifact
	// without metadata.
	ArtifactEncodingVersion = 1
	// ArtifactMetadataEncodingVersion is the first byte of an encoded
	// Artifact with metadata.
	ArtifactMetadataEncodingVersion = 2
	// SpanEncodingVersion is the first byte of an encoded Span.
	SpanEncodingVersion = 1
)

// DecodeError reports a malformed artifact or span encoding: which field was
// being decoded, where it starts in the input, and what is wrong.
type DecodeError struct {
	Field  string
	Offset int
	Reason string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("artifact: decode %s at byte %d: %s", e.Field, e.Offset, e.Reason)
}

// Is reports a DecodeError as corruption: errors.Is(err, codec.ErrCorrupt).
func (e *DecodeError) Is(target error) bool { return target == codec.ErrCorrupt }

// AppendArtifact appends the encoding of a (every field, Tenant, Workspace, Seq
// and Payload included) to dst and returns the extended slice.
func AppendArtifact(dst []byte, a *Artifact) []byte {
	if len(a.Metadata) > 0 {
		dst = append(dst, ArtifactMetadataEncodingVersion)
	} else {
		dst = append(dst, ArtifactEncodingVersion)
	}
	dst = append(dst, a.ID[:]...)
	dst = appendString(dst, a.Tenant)
	dst = appendString(dst, a.Workspace)
	dst = binary.AppendUvarint(dst, a.Seq)
	dst = appendString(dst, a.Type)
	dst = appendString(dst, a.ActorID)
	dst = appendString(dst, a.SessionID)
	dst = appendString(dst, a.ThreadID)
	dst = appendString(dst, a.IdempotencyKey)
	dst = binary.AppendVarint(dst, a.Timestamp)
	dst = binary.AppendVarint(dst, a.IngestedAt)
	dst = appendString(dst, a.Permissions.Visibility)
	dst = appendStrings(dst, a.Permissions.AllowedActors)
	dst = appendStrings(dst, a.Permissions.DeniedActors)
	dst = appendStrings(dst, a.Permissions.RBACTags)
	dst = append(dst, a.ContentHash[:]...)
	dst = appendBool(dst, a.Indexed)
	dst = binary.AppendUvarint(dst, uint64(len(a.Payload)))
	dst = append(dst, a.Payload...)
	if len(a.Metadata) > 0 {
		keys := MetadataKeys(a.Metadata)
		dst = binary.AppendUvarint(dst, uint64(len(keys)))
		for _, k := range keys {
			dst = appendString(dst, k)
			dst = appendString(dst, a.Metadata[k])
		}
	}
	return dst
}

// MetadataKeys returns the keys of m in ascending byte order.
func MetadataKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// DecodeArtifact decodes one artifact at the start of b and returns it with the
// number of bytes consumed. The result never aliases b (b may be an mmap'd
// region). Any malformed or truncated input gives a *DecodeError; it never panics.
func DecodeArtifact(b []byte) (Artifact, int, error) {
	d := newDecoder(b)
	var a Artifact
	v := d.version("artifact version", ArtifactEncodingVersion, ArtifactMetadataEncodingVersion)
	d.uuid("artifact id", a.ID[:])
	a.Tenant = d.Str("tenant")
	a.Workspace = d.Str("workspace")
	a.Seq = d.Uvarint("seq")
	a.Type = d.Str("type")
	a.ActorID = d.Str("actor id")
	a.SessionID = d.Str("session id")
	a.ThreadID = d.Str("thread id")
	a.IdempotencyKey = d.Str("idempotency key")
	a.Timestamp = d.Varint("timestamp")
	a.IngestedAt = d.Varint("ingested at")
	a.Permissions.Visibility = d.Str("visibility")
	a.Permissions.AllowedActors = d.strs("allowed actors")
	a.Permissions.DeniedActors = d.strs("denied actors")
	a.Permissions.RBACTags = d.strs("rbac tags")
	d.fixed("content hash", a.ContentHash[:])
	a.Indexed = d.bool("indexed")
	if p := d.Bytes("payload"); len(p) > 0 {
		a.Payload = append([]byte(nil), p...)
	}
	if v == ArtifactMetadataEncodingVersion {
		a.Metadata = d.metadata("metadata")
	}
	if d.Err != nil {
		return Artifact{}, 0, d.Err
	}
	return a, d.Off, nil
}

// AppendSpan appends the encoding of s to dst and returns the extended slice.
func AppendSpan(dst []byte, s *Span) []byte {
	dst = append(dst, SpanEncodingVersion)
	dst = append(dst, s.ID[:]...)
	dst = append(dst, s.ArtifactID[:]...)
	dst = binary.AppendUvarint(dst, uint64(s.Ordinal))
	dst = binary.AppendUvarint(dst, uint64(s.Start))
	dst = binary.AppendUvarint(dst, uint64(s.End))
	dst = binary.AppendUvarint(dst, uint64(s.Tokens))
	dst = binary.AppendVarint(dst, s.Timestamp)
	return appendString(dst, s.Text)
}

// DecodeSpan decodes one span at the start of b and returns it with the number
// of bytes consumed. Same rules as DecodeArtifact.
func DecodeSpan(b []byte) (Span, int, error) {
	d := newDecoder(b)
	var s Span
	d.version("span version", SpanEncodingVersion, SpanEncodingVersion)
	d.uuid("span id", s.ID[:])
	d.uuid("span artifact id", s.ArtifactID[:])
	s.Ordinal = d.uint32("span ordinal")
	s.Start = d.uint32("span start")
	s.End = d.uint32("span end")
	s.Tokens = d.uint32("span tokens")
	s.Timestamp = d.Varint("span timestamp")
	s.Text = d.Str("span text")
	if d.Err != nil {
		return Span{}, 0, d.Err
	}
	return s, d.Off, nil
}

// MaxArtifactSize bounds the length of AppendArtifact's encoding of a, so an
// encoder can size its buffer once.
func MaxArtifactSize(a *Artifact) int {
	n := 1 + 16 + 32 + 1 + 3*binary.MaxVarintLen64 + // version, id, hash, indexed, seq, timestamps
		stringSize(a.Tenant) + stringSize(a.Workspace) + stringSize(a.Type) + stringSize(a.ActorID) +
		stringSize(a.SessionID) + stringSize(a.ThreadID) + stringSize(a.IdempotencyKey) +
		stringSize(a.Permissions.Visibility) + stringsSize(a.Permissions.AllowedActors) +
		stringsSize(a.Permissions.DeniedActors) + stringsSize(a.Permissions.RBACTags) +
		binary.MaxVarintLen64 + len(a.Payload) + binary.MaxVarintLen64
	for k, v := range a.Metadata {
		n += stringSize(k) + stringSize(v)
	}
	return n
}

// MaxSpanSize bounds the length of AppendSpan's encoding of s.
func MaxSpanSize(s *Span) int {
	return 1 + 32 + 5*binary.MaxVarintLen64 + stringSize(s.Text)
}

func stringSize(s string) int { return binary.MaxVarintLen64 + len(s) }

func stringsSize(ss []string) int {
	n := binary.MaxVarintLen64
	for _, s := range ss {
		n += stringSize(s)
	}
	return n
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ss)))
	for _, s := range ss {
		dst = appendString(dst, s)
	}
	return dst
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// decoder is codec.Decoder whose faults are *DecodeError, with the
// artifact encoding's own field kinds.
type decoder struct{ codec.Decoder }

func newDecoder(b []byte) decoder { return decoder{codec.Decoder{B: b, Fault: decodeFault}} }

func decodeFault(field string, at int, reason string) error {
	return &DecodeError{Field: field, Offset: at, Reason: reason}
}

// version reads a version byte between lo and hi (inclusive) and returns it.
func (d *decoder) version(field string, lo, hi byte) byte {
	if d.Err != nil {
		return 0
	}
	if d.Remaining() < 1 {
		d.Failf(field, d.Off, "truncated")
		return 0
	}
	v := d.B[d.Off]
	if v < lo || v > hi {
		if lo == hi {
			d.Failf(field, d.Off, "unsupported version %d (want %d)", v, lo)
		} else {
			d.Failf(field, d.Off, "unsupported version %d (want %d to %d)", v, lo, hi)
		}
		return 0
	}
	d.Off++
	return v
}

// metadata reads a version 2 artifact's metadata: a count of at least 1
// (no metadata is written as version 1), then key and value strings with
// keys in strictly ascending byte order, so the encoding stays canonical.
func (d *decoder) metadata(field string) map[string]string {
	at := d.Off
	n := d.Uvarint(field)
	if d.Err != nil {
		return nil
	}
	if n == 0 {
		d.Failf(field, at, "count 0 (an artifact without metadata is encoded as version 1)")
		return nil
	}
	// Every pair takes at least its two one-byte lengths.
	if n > uint64(d.Remaining())/2 {
		d.Failf(field, at, "count %d exceeds what the %d bytes remaining can hold", n, d.Remaining())
		return nil
	}
	m := make(map[string]string, n)
	prev := ""
	for i := uint64(0); i < n; i++ {
		kat := d.Off
		k := d.Str(field + " key")
		v := d.Str(field + " value")
		if d.Err != nil {
			return nil
		}
		if i > 0 && k <= prev {
			d.Failf(field+" key", kat, "key %q does not follow %q in ascending order", k, prev)
			return nil
		}
		m[k], prev = v, k
	}
	return m
}

// fixed copies len(dst) bytes into dst.
func (d *decoder) fixed(field string, dst []byte) {
	if d.Err != nil {
		return
	}
	if d.Remaining() < len(dst) {
		d.Failf(field, d.Off, "truncated: need %d bytes, have %d", len(dst), d.Remaining())
		return
	}
	copy(dst, d.B[d.Off:])
	d.Off += len(dst)
}

func (d *decoder) uuid(field string, dst []byte) { d.fixed(field, dst) }

func (d *decoder) uint32(field string) uint32 {
	at := d.Off
	v := d.Uvarint(field)
	if v > math.MaxUint32 {
		d.Failf(field, at, "value %d overflows 32 bits", v)
		return 0
	}
	return uint32(v)
}

func (d *decoder) strs(field string) []string {
	at := d.Off
	n := d.Uvarint(field)
	if d.Err != nil || n == 0 {
		return nil
	}
	// Every string takes at least its one-byte length, which bounds the
	// allocation by the input size.
	if n > uint64(d.Remaining()) {
		d.Failf(field, at, "count %d exceeds the %d bytes remaining", n, d.Remaining())
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.Str(field)
		if d.Err != nil {
			return nil
		}
	}
	return ss
}

func (d *decoder) bool(field string) bool {
	if d.Err != nil {
		return false
	}
	if d.Remaining() < 1 {
		d.Failf(field, d.Off, "truncated")
		return false
	}
	v := d.B[d.Off]
	if v > 1 {
		d.Failf(field, d.Off, "invalid bool byte %#x", v)
		return false
	}
	d.Off++
	return v == 1
}
