package segment

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/edsrzf/mmap-go"
	"github.com/google/uuid"

	"github.com/loci-memory/loci/artifact"
)

// ErrClosed is returned by reads on a closed Segment.
var ErrClosed = errors.New("segment: closed")

// WorkspaceInfo describes one workspace of a segment.
type WorkspaceInfo struct {
	Tenant, Workspace string
	Artifacts, Spans  int
	MinSeq, MaxSeq    uint64 // 0, 0 when the workspace has no artifacts
}

// Ref locates an artifact inside a segment: the index of its workspace in
// Workspaces(), its position in that workspace (Seq order, from 0) and its Seq.
// Lookups use WS and Ordinal; Seq is informational.
type Ref struct {
	WS      int
	Ordinal int
	Seq     uint64
}

// Segment is an open segment file. Its methods are safe for concurrent use;
// everything they return is a copy that stays valid after Close.
type Segment struct {
	name string
	mm   mmap.MMap // nil for OpenBytes

	mu     sync.RWMutex // Close takes it exclusively so no read sees an unmapped region
	closed bool
	data   []byte

	info    Info
	ws      []wsMeta
	idIndex span64
	toc     []tocEntry
	tocOff  uint64
}

// span64 is a byte range [off, off+len) of the file.
type span64 struct{ off, len uint64 }

func (r span64) end() uint64 { return r.off + r.len }

type wsMeta struct {
	WorkspaceInfo
	artifacts, table, idem, spans, text span64
	idemCount                           uint64
	extra                               map[uint16]span64 // extension sections by kind
}

// Open maps the file at path read-only and checks its structure: header and
// footer, the table of contents, section layout and the checksum of every
// section except the bulk ones whose entries carry their own checksums
// (ARTIFACTS, SPAN_TEXT), which are checked on every read. When the file's
// name has the form FileName(id), the id recorded in the footer must match.
// A fault in the file is a *CorruptionError. On Linux, the pages the checks
// read are then dropped from the process's resident set (they stay in the
// page cache).
func Open(path string) (*Segment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("segment: open: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("segment: open: %w", err)
	}
	if fi.Size() < minFileSize {
		// Too small to hold a footer; also avoids mapping an empty file.
		return nil, &CorruptionError{File: path, Offset: fi.Size(),
			Reason: fmt.Sprintf("file is %d bytes, smaller than the minimum %d", fi.Size(), minFileSize)}
	}
	m, err := mmap.Map(f, mmap.RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("segment: mmap %s: %w", path, err)
	}
	s, err := parse(path, m)
	if err == nil {
		err = s.checkFileName()
	}
	if err != nil {
		m.Unmap()
		return nil, err
	}
	// The checks read nearly every page of the file through the mapping;
	// left mapped, those pages would count in the process's resident
	// memory for as long as it runs, though a workspace nobody reads needs
	// none of them (docs/benchmarks.md § Many small workspaces).
	release(m)
	s.mm = m
	return s, nil
}

// OpenBytes parses a segment held in memory, with the same checks as Open
// (except the file name check). b must not be modified while the Segment is
// in use.
func OpenBytes(name string, b []byte) (*Segment, error) {
	return parse(name, b)
}

// Close releases the mapping. It is idempotent; reads after Close return
// ErrClosed (or report not found).
func (s *Segment) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed, s.data = true, nil
	if s.mm != nil {
		if err := s.mm.Unmap(); err != nil {
			return fmt.Errorf("segment: unmap %s: %w", s.name, err)
		}
	}
	return nil
}

// ReleasePages drops the pages of the file read so far from the process's
// resident set (on Linux; elsewhere it does nothing). A reader that has just
// walked an index section to set it up calls it so that a workspace nobody
// queries costs no resident memory; later reads map the pages back from the
// page cache.
func (s *Segment) ReleasePages() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed && s.mm != nil {
		release(s.mm)
	}
}

// Path returns the path given to Open (the name given to OpenBytes).
func (s *Segment) Path() string { return s.name }

// Info summarizes the segment.
func (s *Segment) Info() Info { return s.info }

// Workspaces returns the segment's workspaces sorted by (Tenant, Workspace);
// a workspace's index in this slice is its WS number. The slice is a new
// copy at every call: use Workspace for one of them.
func (s *Segment) Workspaces() []WorkspaceInfo {
	out := make([]WorkspaceInfo, len(s.ws))
	for i := range s.ws {
		out[i] = s.ws[i].WorkspaceInfo
	}
	return out
}

// Workspace returns the summary of workspace i (0 <= i < len(Workspaces())),
// without copying the others: a lookup in a segment of many workspaces
// costs the same as in a segment of one.
func (s *Segment) Workspace(i int) WorkspaceInfo { return s.ws[i].WorkspaceInfo }

// FindWorkspace returns the WS number of tenant/ws.
func (s *Segment) FindWorkspace(tenant, ws string) (int, bool) {
	return findWS(s.ws, tenant, ws)
}

func findWS(list []wsMeta, tenant, ws string) (int, bool) {
	lo, hi := 0, len(list)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if compareWS(list[m].Tenant, list[m].Workspace, tenant, ws) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(list) && list[lo].Tenant == tenant && list[lo].Workspace == ws {
		return lo, true
	}
	return 0, false
}

func compareWS(t1, w1, t2, w2 string) int {
	return cmp.Or(strings.Compare(t1, t2), strings.Compare(w1, w2))
}

// SpanCount returns the number of spans of workspace ws (0 if ws is out of range).
func (s *Segment) SpanCount(ws int) int {
	if ws < 0 || ws >= len(s.ws) {
		return 0
	}
	return s.ws[ws].Spans
}

// rlock takes the read lock unless the segment is closed.
func (s *Segment) rlock() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (s *Segment) corrupt(off uint64, format string, args ...any) error {
	return &CorruptionError{File: s.name, Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
}

func (s *Segment) workspace(ws int) (*wsMeta, error) {
	if ws < 0 || ws >= len(s.ws) {
		return nil, fmt.Errorf("segment %s: no workspace %d (segment has %d)", s.name, ws, len(s.ws))
	}
	return &s.ws[ws], nil
}

// SpanID returns the id of span i of workspace ws (its row in file order)
// without reading its text.
func (s *Segment) SpanID(ws int, i int) (uuid.UUID, bool) {
	id, _, ok := s.SpanIDs(ws, i)
	return id, ok
}

// SpanIDs returns the ids of span i of workspace ws and of its artifact,
// without reading its text.
func (s *Segment) SpanIDs(ws int, i int) (span, art uuid.UUID, ok bool) {
	if s.rlock() != nil {
		return span, art, false
	}
	defer s.mu.RUnlock()
	w, err := s.workspace(ws)
	if err != nil || i < 0 || uint64(i) >= uint64(w.Spans) {
		return span, art, false
	}
	at := w.spans.off + uint64(i)*spanRowSize
	copy(span[:], s.data[at:at+16])
	ord := uint64(le.Uint32(s.data[at+spanRowArt:]))
	if ord >= uint64(w.Artifacts) {
		return span, art, false
	}
	artRow := w.table.off + ord*artRowSize
	copy(art[:], s.data[artRow:artRow+16])
	return span, art, true
}

// SpanTextCRC returns the stored CRC-32C of the text of span i of workspace
// ws and its timestamp, without reading the text: search orders spans of
// equal score by them (artifact.TieKeyCRC).
func (s *Segment) SpanTextCRC(ws int, i int) (textCRC uint32, timestamp int64, ok bool) {
	if s.rlock() != nil {
		return 0, 0, false
	}
	defer s.mu.RUnlock()
	w, err := s.workspace(ws)
	if err != nil || i < 0 || uint64(i) >= uint64(w.Spans) {
		return 0, 0, false
	}
	row := s.data[w.spans.off+uint64(i)*spanRowSize:]
	return le.Uint32(row[spanRowTextCRC:]), int64(le.Uint64(row[spanRowTime:])), true
}

// Span returns span i of workspace ws (its row in file order), text
// checksum verified, copied out of the mapping.
func (s *Segment) Span(ws int, i int) (artifact.Span, error) {
	if err := s.rlock(); err != nil {
		return artifact.Span{}, err
	}
	defer s.mu.RUnlock()
	w, err := s.workspace(ws)
	if err != nil {
		return artifact.Span{}, err
	}
	if i < 0 || uint64(i) >= uint64(w.Spans) {
		return artifact.Span{}, fmt.Errorf("segment %s: workspace %d has no span %d", s.name, ws, i)
	}
	sp, _, err := s.readSpan(w, uint64(i))
	return sp, err
}

// Section returns the bytes of a workspace's extension section of the given
// kind, as written in WorkspaceData.Sections. The slice points into the
// mapped file (no copy; its checksum was checked at Open) and is valid until
// Close: callers must not keep it longer, nor modify it.
func (s *Segment) Section(ws int, kind uint16) ([]byte, bool) {
	if s.rlock() != nil {
		return nil, false
	}
	defer s.mu.RUnlock()
	w, err := s.workspace(ws)
	if err != nil {
		return nil, false
	}
	sec, ok := w.extra[kind]
	if !ok {
		return nil, false
	}
	return s.data[sec.off:sec.end():sec.end()], true
}

// FindArtifact looks id up in the segment-wide id index.
func (s *Segment) FindArtifact(id uuid.UUID) (Ref, bool) {
	if s.rlock() != nil {
		return Ref{}, false
	}
	defer s.mu.RUnlock()
	b := s.data[s.idIndex.off:s.idIndex.end()]
	n := len(b) / idRowSize
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(b[m*idRowSize:m*idRowSize+16], id[:]) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == n {
		return Ref{}, false
	}
	row := b[lo*idRowSize : (lo+1)*idRowSize]
	if !bytes.Equal(row[:16], id[:]) {
		return Ref{}, false
	}
	ws, ord := le.Uint32(row[16:]), le.Uint32(row[20:])
	if uint64(ws) >= uint64(len(s.ws)) || uint64(ord) >= uint64(s.ws[ws].Artifacts) {
		return Ref{}, false // dangling row: Verify reports it
	}
	return Ref{WS: int(ws), Ordinal: int(ord), Seq: le.Uint64(row[24:])}, true
}

// FindIdempotencyKey looks key up in workspace ws's idempotency table.
func (s *Segment) FindIdempotencyKey(ws int, key string) (Ref, bool) {
	if s.rlock() != nil {
		return Ref{}, false
	}
	defer s.mu.RUnlock()
	if ws < 0 || ws >= len(s.ws) || key == "" {
		return Ref{}, false
	}
	w := &s.ws[ws]
	k := []byte(key)
	lo, hi := uint64(0), w.idemCount
	for lo < hi {
		m := (lo + hi) / 2
		_, mk, err := s.idemRow(w, m)
		if err != nil {
			return Ref{}, false
		}
		if bytes.Compare(mk, k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == w.idemCount {
		return Ref{}, false
	}
	ord, mk, err := s.idemRow(w, lo)
	if err != nil || !bytes.Equal(mk, k) || uint64(ord) >= uint64(w.Artifacts) {
		return Ref{}, false
	}
	row := s.data[w.table.off+uint64(ord)*artRowSize:]
	return Ref{WS: ws, Ordinal: int(ord), Seq: le.Uint64(row[artRowSeq:])}, true
}

// idemRow returns row i of an idempotency table: the ordinal and the key
// (aliasing the file).
func (s *Segment) idemRow(w *wsMeta, i uint64) (uint32, []byte, error) {
	rowAt := w.idem.off + idemHeaderSize + i*idemRowSize
	row := s.data[rowAt : rowAt+idemRowSize]
	blob := w.idem.off + idemHeaderSize + w.idemCount*idemRowSize
	blobLen := w.idem.end() - blob
	klen, koff := uint64(le.Uint32(row[4:])), le.Uint64(row[8:])
	if koff > blobLen || klen > blobLen-koff {
		return 0, nil, s.corrupt(rowAt, "idempotency key %d (offset %d, length %d) outside its %d-byte key blob", i, koff, klen, blobLen)
	}
	return le.Uint32(row), s.data[blob+koff : blob+koff+klen], nil
}

// Artifact reads the artifact at r: it verifies the entry checksum,
// decompresses, decodes and checks that the artifact is the one the tables
// say (id, seq, tenant, workspace). The result is a fresh copy.
func (s *Segment) Artifact(r Ref) (*artifact.Artifact, error) {
	if err := s.rlock(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	w, err := s.workspace(r.WS)
	if err != nil {
		return nil, err
	}
	if r.Ordinal < 0 || r.Ordinal >= w.Artifacts {
		return nil, fmt.Errorf("segment %s: no artifact %d in workspace %d (it has %d)", s.name, r.Ordinal, r.WS, w.Artifacts)
	}
	a, _, err := s.readArtifact(w, uint64(r.Ordinal))
	return a, err
}

// readArtifact decodes artifact ord of w and returns it with the size of its
// entry. The caller holds the read lock and has range-checked ord.
func (s *Segment) readArtifact(w *wsMeta, ord uint64) (*artifact.Artifact, uint64, error) {
	rowAt := w.table.off + ord*artRowSize
	row := s.data[rowAt : rowAt+artRowSize]
	rel := le.Uint64(row[artRowEntry:])
	if rel > w.artifacts.len || w.artifacts.len-rel < entryHeaderSize {
		return nil, 0, s.corrupt(rowAt, "artifact %d: entry offset %d outside its %d-byte ARTIFACTS section", ord, rel, w.artifacts.len)
	}
	at := w.artifacts.off + rel
	hdr := s.data[at : at+entryHeaderSize]
	stored, rawLen, flags := uint64(le.Uint32(hdr[4:])), uint64(le.Uint32(hdr[8:])), hdr[12]
	if stored > w.artifacts.len-rel-entryHeaderSize {
		return nil, 0, s.corrupt(at, "artifact entry of %d bytes runs past the end of its ARTIFACTS section", stored)
	}
	bodyAt := at + entryHeaderSize
	body := s.data[bodyAt : bodyAt+stored]
	if got := crc(s.data[at+4 : bodyAt+stored]); got != le.Uint32(hdr) {
		return nil, 0, s.corrupt(at, "artifact entry checksum mismatch (stored %#08x, computed %#08x)", le.Uint32(hdr), got)
	}
	switch flags {
	case 0:
		if rawLen != stored {
			return nil, 0, s.corrupt(at, "uncompressed artifact entry: raw length %d != stored length %d", rawLen, stored)
		}
	case entryFlagZstd:
		if rawLen > maxZstdEntry {
			return nil, 0, s.corrupt(at, "compressed artifact entry claims %d raw bytes, more than the limit %d", rawLen, maxZstdEntry)
		}
		raw, err := decompress(body, int(rawLen))
		if err != nil {
			return nil, 0, s.corrupt(at, "artifact entry: zstd: %v", err)
		}
		if uint64(len(raw)) != rawLen {
			return nil, 0, s.corrupt(at, "artifact entry inflates to %d bytes, want %d", len(raw), rawLen)
		}
		body, bodyAt = raw, at // decode errors point at the entry
	default:
		return nil, 0, s.corrupt(at+12, "artifact entry has unknown flags %#02x", flags)
	}
	a, n, err := artifact.DecodeArtifact(body)
	if err != nil {
		off := bodyAt
		var de *artifact.DecodeError
		if errors.As(err, &de) && flags == 0 {
			off += uint64(de.Offset)
		}
		return nil, 0, s.corrupt(off, "artifact entry: %v", err)
	}
	if n != len(body) {
		return nil, 0, s.corrupt(at, "artifact entry has %d trailing bytes", len(body)-n)
	}
	switch {
	case !bytes.Equal(a.ID[:], row[:16]):
		return nil, 0, s.corrupt(at, "artifact entry holds id %s, table says %s", a.ID, uuid.UUID(row[:16]))
	case a.Seq != le.Uint64(row[artRowSeq:]):
		return nil, 0, s.corrupt(at, "artifact entry holds seq %d, table says %d", a.Seq, le.Uint64(row[artRowSeq:]))
	case a.Tenant != w.Tenant || a.Workspace != w.Workspace:
		return nil, 0, s.corrupt(at, "artifact entry belongs to %q/%q, not to its section's %q/%q", a.Tenant, a.Workspace, w.Tenant, w.Workspace)
	}
	return &a, entryHeaderSize + stored, nil
}

// Artifacts calls fn with every artifact of workspace ws in Seq order,
// stopping at the first error (fn's or a read error).
func (s *Segment) Artifacts(ws int, fn func(*artifact.Artifact) error) error {
	w, err := s.workspace(ws)
	if err != nil {
		return err
	}
	for i := 0; i < w.Artifacts; i++ {
		if err := s.rlock(); err != nil {
			return err
		}
		a, _, err := s.readArtifact(w, uint64(i))
		s.mu.RUnlock()
		if err != nil {
			return err
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// RawArtifacts calls fn for every artifact of workspace ws in Seq order with
// a light artifact (ID, Seq, Tenant, Workspace and IdempotencyKey only) and a
// copy of its stored entry, checksum checked but not decoded, for
// WorkspaceData.Entries: compaction copies entries without decompressing.
func (s *Segment) RawArtifacts(ws int, fn func(a *artifact.Artifact, entry []byte) error) error {
	if err := s.rlock(); err != nil {
		return err
	}
	w, err := s.workspace(ws)
	if err != nil {
		s.mu.RUnlock()
		return err
	}
	keys := map[uint32]string{}
	for i := uint64(0); i < w.idemCount; i++ {
		ord, key, err := s.idemRow(w, i)
		if err != nil {
			s.mu.RUnlock()
			return err
		}
		keys[ord] = string(key)
	}
	type item struct {
		a     *artifact.Artifact
		entry []byte
	}
	items := make([]item, 0, w.Artifacts)
	for ord := uint64(0); ord < uint64(w.Artifacts); ord++ {
		rowAt := w.table.off + ord*artRowSize
		row := s.data[rowAt : rowAt+artRowSize]
		rel := le.Uint64(row[artRowEntry:])
		if rel > w.artifacts.len || w.artifacts.len-rel < entryHeaderSize {
			s.mu.RUnlock()
			return s.corrupt(rowAt, "artifact %d: entry offset %d outside its %d-byte ARTIFACTS section", ord, rel, w.artifacts.len)
		}
		at := w.artifacts.off + rel
		stored := uint64(le.Uint32(s.data[at+4:]))
		if stored > w.artifacts.len-rel-entryHeaderSize {
			s.mu.RUnlock()
			return s.corrupt(at, "artifact entry of %d bytes runs past the end of its ARTIFACTS section", stored)
		}
		entry := s.data[at : at+entryHeaderSize+stored]
		if got := crc(entry[4:]); got != le.Uint32(entry) {
			s.mu.RUnlock()
			return s.corrupt(at, "artifact entry checksum mismatch (stored %#08x, computed %#08x)", le.Uint32(entry), got)
		}
		a := &artifact.Artifact{Tenant: w.Tenant, Workspace: w.Workspace, Seq: le.Uint64(row[artRowSeq:]), IdempotencyKey: keys[uint32(ord)]}
		copy(a.ID[:], row[:16])
		items = append(items, item{a, bytes.Clone(entry)})
	}
	s.mu.RUnlock()
	for _, it := range items { // fn runs without the lock, as for Artifacts
		if err := fn(it.a, it.entry); err != nil {
			return err
		}
	}
	return nil
}

// ArtifactSpans returns the spans of the artifact at r, by Ordinal.
func (s *Segment) ArtifactSpans(r Ref) ([]artifact.Span, error) {
	if err := s.rlock(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	w, err := s.workspace(r.WS)
	if err != nil {
		return nil, err
	}
	if r.Ordinal < 0 || r.Ordinal >= w.Artifacts {
		return nil, fmt.Errorf("segment %s: no artifact %d in workspace %d (it has %d)", s.name, r.Ordinal, r.WS, w.Artifacts)
	}
	first, n, err := s.spanRange(w, uint64(r.Ordinal))
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]artifact.Span, 0, n)
	for i := first; i < first+n; i++ {
		sp, ord, err := s.readSpan(w, i)
		if err != nil {
			return nil, err
		}
		if ord != uint64(r.Ordinal) {
			return nil, s.corrupt(w.spans.off+i*spanRowSize, "span %d belongs to artifact %d, table says %d", i, ord, r.Ordinal)
		}
		out = append(out, sp)
	}
	return out, nil
}

// spanRange returns the index of artifact ord's first span and its span count.
func (s *Segment) spanRange(w *wsMeta, ord uint64) (uint64, uint64, error) {
	rowAt := w.table.off + ord*artRowSize
	first := uint64(le.Uint32(s.data[rowAt+artRowFirst:]))
	n := uint64(le.Uint32(s.data[rowAt+artRowNSpans:]))
	if first+n > uint64(w.Spans) {
		return 0, 0, s.corrupt(rowAt, "artifact %d: spans [%d, %d) outside the workspace's %d spans", ord, first, first+n, w.Spans)
	}
	return first, n, nil
}

// readSpan decodes span row i of w (range-checked by the caller), verifying
// its text checksum, and returns it with its artifact ordinal.
func (s *Segment) readSpan(w *wsMeta, i uint64) (artifact.Span, uint64, error) {
	rowAt := w.spans.off + i*spanRowSize
	row := s.data[rowAt : rowAt+spanRowSize]
	ord := uint64(le.Uint32(row[spanRowArt:]))
	if ord >= uint64(w.Artifacts) {
		return artifact.Span{}, 0, s.corrupt(rowAt, "span %d: artifact ordinal %d out of range (workspace has %d)", i, ord, w.Artifacts)
	}
	toff, tlen := le.Uint64(row[spanRowTextOff:]), uint64(le.Uint32(row[spanRowTextLen:]))
	if toff > w.text.len || tlen > w.text.len-toff {
		return artifact.Span{}, 0, s.corrupt(rowAt, "span %d: text [%d, +%d) outside its %d-byte SPAN_TEXT section", i, toff, tlen, w.text.len)
	}
	text := s.data[w.text.off+toff : w.text.off+toff+tlen]
	if got, want := crc(text), le.Uint32(row[spanRowTextCRC:]); got != want {
		return artifact.Span{}, 0, s.corrupt(w.text.off+toff, "span %d: text checksum mismatch (stored %#08x, computed %#08x)", i, want, got)
	}
	artRow := w.table.off + ord*artRowSize
	var sp artifact.Span
	copy(sp.ID[:], row[:16])
	copy(sp.ArtifactID[:], s.data[artRow:artRow+16])
	sp.Ordinal = le.Uint32(row[spanRowOrdinal:])
	sp.Start = le.Uint32(row[spanRowStart:])
	sp.End = le.Uint32(row[spanRowEnd:])
	sp.Tokens = le.Uint32(row[spanRowTokens:])
	sp.Timestamp = int64(le.Uint64(row[spanRowTime:]))
	sp.Text = string(text)
	return sp, ord, nil
}

// Spans calls fn with every span of workspace ws, in artifact order then by
// Ordinal, stopping at the first error.
func (s *Segment) Spans(ws int, fn func(artifact.Span) error) error {
	w, err := s.workspace(ws)
	if err != nil {
		return err
	}
	for i := 0; i < w.Spans; i++ {
		if err := s.rlock(); err != nil {
			return err
		}
		sp, _, err := s.readSpan(w, uint64(i))
		s.mu.RUnlock()
		if err != nil {
			return err
		}
		if err := fn(sp); err != nil {
			return err
		}
	}
	return nil
}

// checkFileName compares the segment id of the footer with the file name,
// when the name has the form FileName(id).
func (s *Segment) checkFileName() error {
	base := filepath.Base(s.name)
	digits, ok := strings.CutSuffix(base, ".seg")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return nil
	}
	id, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || id == s.info.ID {
		return nil
	}
	return s.corrupt(uint64(len(s.data))-footerSize+ftSegmentID, "footer holds segment id %d but the file is named %s", s.info.ID, base)
}
