package segment

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"path/filepath"
	"slices"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/vfs"

	"github.com/loci-memory/loci/artifact"
)

// WorkspaceData is one workspace's content for a new segment.
type WorkspaceData struct {
	Tenant, Workspace string
	// Artifacts in strictly ascending Seq (Write returns an error otherwise).
	// Each must carry this Tenant and Workspace and a ContentHash matching its
	// Payload.
	Artifacts []*artifact.Artifact
	// Spans holds every span of those artifacts. Write stores them grouped by
	// artifact in artifact order, then by Ordinal, whatever the input order;
	// each artifact's ordinals must be 0, 1, 2, ...
	Spans []artifact.Span
	// Entries, when set, holds one stored artifact entry per artifact (as
	// Segment.RawArtifacts yields them: header and body, checksum checked),
	// written verbatim: compaction copies artifacts without decoding them.
	// Artifacts[i] then needs only ID, Seq, Tenant, Workspace and
	// IdempotencyKey. A nil entry is encoded from Artifacts[i] as usual.
	Entries [][]byte
	// Sections are extra per-workspace sections (index data: postings, term
	// dictionary, document lengths, vectors), stored as given after the
	// workspace's own sections and checksummed like them. Kinds must be
	// extension kinds (see ExtensionKind) and distinct.
	Sections []Section
}

// Section is an extra per-workspace section: its kind and its bytes. Readers
// get the bytes back with Segment.Section.
type Section struct {
	Kind uint16
	Data []byte
}

// Info summarizes a segment.
type Info struct {
	ID                           uint64
	Size                         int64 // file size in bytes
	MinSeq, MaxSeq               uint64
	Workspaces, Artifacts, Spans int
}

// wsPlan is a validated workspace, ready to be written.
type wsPlan struct {
	d          *WorkspaceData
	minSeq     uint64
	maxSeq     uint64
	spans      []int    // indices into d.Spans, in file order
	spanArt    []uint32 // artifact ordinal of each span, in file order
	firstSpan  []uint32 // per artifact
	spanCount  []uint32 // per artifact
	idem       []idemKey
	textLength uint64
}

// hasEntry reports whether artifact i comes as a stored entry.
func (p *wsPlan) hasEntry(i int) bool { return i < len(p.d.Entries) && p.d.Entries[i] != nil }

type idemKey struct {
	key     string
	ordinal uint32
}

type idRow struct {
	id      uuid.UUID
	ws      uint32
	ordinal uint32
	seq     uint64
}

// Write writes dir/FileName(id) atomically: it writes a temporary file in dir
// (named FileName(id) + ".*.tmp"), fsyncs it, renames it into place and fsyncs
// dir. An existing file of that name is replaced. Workspaces are stored sorted
// by (Tenant, Workspace) whatever the input order; a duplicate workspace, a
// span whose ArtifactID is not an artifact of its workspace, a duplicate
// artifact id or idempotency key, or any other invalid input is an error and
// leaves no file behind.
func Write(dir string, id uint64, ws []WorkspaceData) (Info, error) {
	return WriteFS(vfs.Default, dir, id, ws)
}

// WriteFS is Write on the file system fsys. A write that fails, for lack of
// space say, removes its temporary file, so a retry starts clean.
func WriteFS(fsys vfs.FS, dir string, id uint64, ws []WorkspaceData) (Info, error) {
	plans, ids, info, err := planSegment(ws)
	if err != nil {
		return Info{}, err
	}
	info.ID = id

	final := filepath.Join(dir, FileName(id))
	var size uint64
	err = codec.ReplaceFile(fsys, final, FileName(id)+".*.tmp", func(f io.Writer) error {
		w := &sectionWriter{bw: bufio.NewWriterSize(f, 256<<10)}
		var err error
		if size, err = w.writeSegment(id, plans, ids); err != nil {
			return err
		}
		return w.bw.Flush()
	})
	if err != nil {
		return Info{}, fmt.Errorf("segment: write %s: %w", final, err)
	}
	info.Size = int64(size)
	return info, nil
}

// planSegment validates the input and computes everything that must be known
// before the first byte is written.
func planSegment(ws []WorkspaceData) ([]*wsPlan, []idRow, Info, error) {
	var info Info
	if uint64(len(ws)) >= allWorkspaces {
		return nil, nil, info, errors.New("segment: too many workspaces")
	}
	plans := make([]*wsPlan, len(ws))
	for i := range ws {
		plans[i] = &wsPlan{d: &ws[i]}
	}
	slices.SortFunc(plans, func(a, b *wsPlan) int {
		return cmp.Or(cmp.Compare(a.d.Tenant, b.d.Tenant), cmp.Compare(a.d.Workspace, b.d.Workspace))
	})
	var ids []idRow
	for i, p := range plans {
		if i > 0 && p.d.Tenant == plans[i-1].d.Tenant && p.d.Workspace == plans[i-1].d.Workspace {
			return nil, nil, info, fmt.Errorf("segment: duplicate workspace %q/%q", p.d.Tenant, p.d.Workspace)
		}
		if err := p.plan(uint32(i), &ids); err != nil {
			return nil, nil, info, fmt.Errorf("segment: workspace %q/%q: %w", p.d.Tenant, p.d.Workspace, err)
		}
		if len(p.d.Artifacts) > 0 {
			if info.Artifacts == 0 || p.minSeq < info.MinSeq {
				info.MinSeq = p.minSeq
			}
			info.MaxSeq = max(info.MaxSeq, p.maxSeq)
		}
		info.Artifacts += len(p.d.Artifacts)
		info.Spans += len(p.d.Spans)
	}
	info.Workspaces = len(plans)
	slices.SortFunc(ids, func(a, b idRow) int { return bytes.Compare(a.id[:], b.id[:]) })
	for i := 1; i < len(ids); i++ {
		if ids[i].id == ids[i-1].id {
			return nil, nil, info, fmt.Errorf("segment: duplicate artifact id %s", ids[i].id)
		}
	}
	return plans, ids, info, nil
}

func (p *wsPlan) plan(wsIdx uint32, ids *[]idRow) error {
	d := p.d
	if len(d.Tenant) > math.MaxUint32 || len(d.Workspace) > math.MaxUint32 {
		return errors.New("tenant or workspace name too long")
	}
	if uint64(len(d.Artifacts)) > math.MaxUint32 || uint64(len(d.Spans)) > math.MaxUint32 {
		return errors.New("too many artifacts or spans")
	}
	if d.Entries != nil && len(d.Entries) != len(d.Artifacts) {
		return fmt.Errorf("%d entries for %d artifacts", len(d.Entries), len(d.Artifacts))
	}
	for i, e := range d.Entries {
		if e != nil && (len(e) < entryHeaderSize || uint64(len(e)-entryHeaderSize) != uint64(le.Uint32(e[4:])) ||
			crc(e[4:]) != le.Uint32(e)) {
			return fmt.Errorf("artifact %d: stored entry is malformed", i)
		}
	}
	kinds := map[uint16]bool{}
	for _, sec := range d.Sections {
		if !ExtensionKind(sec.Kind) {
			return fmt.Errorf("section kind %d is not an extension kind", sec.Kind)
		}
		if kinds[sec.Kind] {
			return fmt.Errorf("two sections of kind %s", kindName(sec.Kind))
		}
		kinds[sec.Kind] = true
	}
	ordinals := make(map[uuid.UUID]uint32, len(d.Artifacts))
	for i, a := range d.Artifacts {
		if a == nil {
			return fmt.Errorf("artifact %d is nil", i)
		}
		if a.Tenant != d.Tenant || a.Workspace != d.Workspace {
			return fmt.Errorf("artifact %s belongs to workspace %q/%q", a.ID, a.Tenant, a.Workspace)
		}
		if i > 0 && a.Seq <= d.Artifacts[i-1].Seq {
			return fmt.Errorf("artifact %s: seq %d after seq %d: artifacts must be in strictly ascending Seq",
				a.ID, a.Seq, d.Artifacts[i-1].Seq)
		}
		if !p.hasEntry(i) && artifact.ContentHash(a.Payload) != a.ContentHash {
			return fmt.Errorf("artifact %s: ContentHash does not match Payload", a.ID)
		}
		if _, dup := ordinals[a.ID]; dup {
			return fmt.Errorf("duplicate artifact id %s", a.ID)
		}
		ordinals[a.ID] = uint32(i)
		*ids = append(*ids, idRow{id: a.ID, ws: wsIdx, ordinal: uint32(i), seq: a.Seq})
		if a.IdempotencyKey != "" {
			p.idem = append(p.idem, idemKey{key: a.IdempotencyKey, ordinal: uint32(i)})
		}
	}
	if n := len(d.Artifacts); n > 0 {
		p.minSeq, p.maxSeq = d.Artifacts[0].Seq, d.Artifacts[n-1].Seq
	}
	slices.SortFunc(p.idem, func(a, b idemKey) int { return cmp.Compare(a.key, b.key) })
	for i := 1; i < len(p.idem); i++ {
		if p.idem[i].key == p.idem[i-1].key {
			return fmt.Errorf("idempotency key %q used by artifacts %s and %s", p.idem[i].key,
				d.Artifacts[p.idem[i-1].ordinal].ID, d.Artifacts[p.idem[i].ordinal].ID)
		}
	}

	p.spans = make([]int, len(d.Spans))
	art := make([]uint32, len(d.Spans)) // by input index
	for i := range d.Spans {
		sp := &d.Spans[i]
		ord, ok := ordinals[sp.ArtifactID]
		if !ok {
			return fmt.Errorf("span %s: artifact %s is not in this workspace", sp.ID, sp.ArtifactID)
		}
		if sp.Start > sp.End {
			return fmt.Errorf("span %s: start %d after end %d", sp.ID, sp.Start, sp.End)
		}
		if uint64(len(sp.Text)) > math.MaxUint32 {
			return fmt.Errorf("span %s: text too long", sp.ID)
		}
		p.spans[i] = i
		art[i] = ord
		p.textLength += uint64(len(sp.Text))
	}
	slices.SortStableFunc(p.spans, func(a, b int) int {
		return cmp.Or(cmp.Compare(art[a], art[b]), cmp.Compare(d.Spans[a].Ordinal, d.Spans[b].Ordinal))
	})
	p.spanArt = make([]uint32, len(p.spans))
	p.firstSpan = make([]uint32, len(d.Artifacts))
	p.spanCount = make([]uint32, len(d.Artifacts))
	for i, si := range p.spans {
		ord := art[si]
		p.spanArt[i] = ord
		if p.spanCount[ord] == 0 {
			p.firstSpan[ord] = uint32(i)
		}
		if got := d.Spans[si].Ordinal; got != p.spanCount[ord] {
			return fmt.Errorf("artifact %s: span ordinals must be 0, 1, 2, ...: found %d where %d belongs",
				d.Artifacts[ord].ID, got, p.spanCount[ord])
		}
		p.spanCount[ord]++
	}
	// Artifacts without spans point at where their spans would be.
	next := uint32(0)
	for ord := range p.firstSpan {
		if p.spanCount[ord] == 0 {
			p.firstSpan[ord] = next
		}
		next = p.firstSpan[ord] + p.spanCount[ord]
	}
	return nil
}

type tocEntry struct {
	kind, flags uint16
	ws          uint32
	off, length uint64
	crc         uint32
}

// sectionWriter writes a segment sequentially, tracking the file offset and
// the checksum of the section being written.
type sectionWriter struct {
	bw    *bufio.Writer
	off   uint64
	start uint64
	crc   uint32
	toc   []tocEntry
	err   error
	buf   []byte // scratch
	raw   []byte // scratch for artifact encodings
	comp  []byte // scratch for compressed encodings
}

func (w *sectionWriter) write(p []byte) {
	if w.err != nil {
		return
	}
	n, err := w.bw.Write(p)
	w.off += uint64(n)
	w.crc = crc32.Update(w.crc, castagnoli, p)
	w.err = err
}

// begin pads the file with zeros to an 8-byte boundary and starts a section.
func (w *sectionWriter) begin() {
	var zeros [8]byte
	if pad := align8(w.off) - w.off; pad > 0 && w.err == nil {
		n, err := w.bw.Write(zeros[:pad])
		w.off += uint64(n)
		w.err = err
	}
	w.start, w.crc = w.off, 0
}

func (w *sectionWriter) end(kind, flags uint16, ws uint32) {
	w.toc = append(w.toc, tocEntry{kind: kind, flags: flags, ws: ws, off: w.start, length: w.off - w.start, crc: w.crc})
}

func (w *sectionWriter) writeSegment(id uint64, plans []*wsPlan, ids []idRow) (uint64, error) {
	w.write(append([]byte(headerMagic), FormatVersion))

	// WORKSPACES
	w.begin()
	b := le.AppendUint32(w.buf[:0], uint32(len(plans)))
	b = le.AppendUint32(b, 0)
	for _, p := range plans {
		b = le.AppendUint32(b, uint32(len(p.d.Tenant)))
		b = append(b, p.d.Tenant...)
		b = le.AppendUint32(b, uint32(len(p.d.Workspace)))
		b = append(b, p.d.Workspace...)
		b = le.AppendUint32(b, uint32(len(p.d.Artifacts)))
		b = le.AppendUint32(b, uint32(len(p.d.Spans)))
		b = le.AppendUint64(b, p.minSeq)
		b = le.AppendUint64(b, p.maxSeq)
		w.write(b)
		b = b[:0]
	}
	w.write(b)
	w.end(KindWorkspaces, 0, allWorkspaces)
	w.buf = b

	for i, p := range plans {
		if err := w.writeWorkspace(uint32(i), p); err != nil {
			return 0, err
		}
	}

	// ARTIFACT_ID_INDEX
	w.begin()
	for _, r := range ids {
		b := append(w.buf[:0], r.id[:]...)
		b = le.AppendUint32(b, r.ws)
		b = le.AppendUint32(b, r.ordinal)
		b = le.AppendUint64(b, r.seq)
		w.write(b)
		w.buf = b
	}
	w.end(KindArtifactIDIndex, 0, allWorkspaces)

	// TOC, then the footer.
	w.begin()
	tocOff := w.off
	b = le.AppendUint32(w.buf[:0], uint32(len(w.toc)))
	b = le.AppendUint32(b, 0)
	for _, e := range w.toc {
		b = le.AppendUint16(b, e.kind)
		b = le.AppendUint16(b, e.flags)
		b = le.AppendUint32(b, e.ws)
		b = le.AppendUint64(b, e.off)
		b = le.AppendUint64(b, e.length)
		b = le.AppendUint32(b, e.crc)
		b = le.AppendUint32(b, 0)
	}
	w.crc = 0
	w.write(b)
	tocCRC := w.crc
	b = le.AppendUint64(b[:0], tocOff)
	b = le.AppendUint64(b, id)
	b = le.AppendUint32(b, uint32(w.off-tocOff))
	b = le.AppendUint32(b, tocCRC)
	b = le.AppendUint32(b, FormatVersion)
	b = le.AppendUint32(b, crc(b))
	b = append(b, footerMagic...)
	w.write(b)
	w.buf = b
	return w.off, w.err
}

func (w *sectionWriter) writeWorkspace(wsIdx uint32, p *wsPlan) error {
	d := p.d

	// ARTIFACTS: one entry per artifact; remember where each starts.
	w.begin()
	entryOffs := make([]uint64, len(d.Artifacts))
	for i, a := range d.Artifacts {
		entryOffs[i] = w.off - w.start
		if p.hasEntry(i) {
			w.write(d.Entries[i])
			continue
		}
		w.raw = artifact.AppendArtifact(w.raw[:0], a)
		if uint64(len(w.raw)) > math.MaxUint32 {
			return fmt.Errorf("segment: artifact %s: encoding of %d bytes is too large", a.ID, len(w.raw))
		}
		comp, ok, err := maybeCompress(w.comp[:0], w.raw)
		if err != nil {
			return fmt.Errorf("segment: compress artifact %s: %w", a.ID, err)
		}
		body, flags := w.raw, byte(0)
		if ok {
			body, flags, w.comp = comp, entryFlagZstd, comp
		}
		var hdr [entryHeaderSize]byte
		le.PutUint32(hdr[4:], uint32(len(body)))
		le.PutUint32(hdr[8:], uint32(len(w.raw)))
		hdr[12] = flags
		le.PutUint32(hdr[0:], crc32.Update(crc(hdr[4:]), castagnoli, body))
		w.write(hdr[:])
		w.write(body)
	}
	w.end(KindArtifacts, flagDeferredCRC, wsIdx)

	// ARTIFACT_TABLE
	w.begin()
	for i, a := range d.Artifacts {
		b := append(w.buf[:0], a.ID[:]...)
		b = le.AppendUint64(b, a.Seq)
		b = le.AppendUint64(b, entryOffs[i])
		b = le.AppendUint32(b, p.firstSpan[i])
		b = le.AppendUint32(b, p.spanCount[i])
		w.write(b)
		w.buf = b
	}
	w.end(KindArtifactTable, 0, wsIdx)

	// IDEMPOTENCY
	w.begin()
	b := le.AppendUint32(w.buf[:0], uint32(len(p.idem)))
	b = le.AppendUint32(b, 0)
	w.write(b)
	var keyOff uint64
	for _, k := range p.idem {
		b = le.AppendUint32(b[:0], k.ordinal)
		b = le.AppendUint32(b, uint32(len(k.key)))
		b = le.AppendUint64(b, keyOff)
		w.write(b)
		keyOff += uint64(len(k.key))
	}
	for _, k := range p.idem {
		w.write([]byte(k.key))
	}
	w.end(KindIdempotency, 0, wsIdx)
	w.buf = b

	// SPANS
	w.begin()
	var textOff uint64
	for i, si := range p.spans {
		sp := &d.Spans[si]
		b := append(w.buf[:0], sp.ID[:]...)
		b = le.AppendUint32(b, p.spanArt[i])
		b = le.AppendUint32(b, sp.Ordinal)
		b = le.AppendUint32(b, sp.Start)
		b = le.AppendUint32(b, sp.End)
		b = le.AppendUint32(b, sp.Tokens)
		b = le.AppendUint32(b, uint32(len(sp.Text)))
		b = le.AppendUint64(b, uint64(sp.Timestamp))
		b = le.AppendUint64(b, textOff)
		b = le.AppendUint32(b, crc32.Checksum([]byte(sp.Text), castagnoli))
		b = le.AppendUint32(b, 0)
		w.write(b)
		w.buf = b
		textOff += uint64(len(sp.Text))
	}
	w.end(KindSpans, 0, wsIdx)

	// SPAN_TEXT
	w.begin()
	for _, si := range p.spans {
		w.write([]byte(d.Spans[si].Text))
	}
	w.end(KindSpanText, flagDeferredCRC, wsIdx)

	for _, sec := range d.Sections {
		w.begin()
		w.write(sec.Data)
		w.end(sec.Kind, 0, wsIdx)
	}
	return w.err
}
