package segment

import (
	"fmt"
	"math"
)

// parse checks the structure of a segment image and builds the in-memory
// directory. Every offset and length read from b is range-checked here or on
// use, so a hostile image yields a *CorruptionError, never a panic.
func parse(name string, b []byte) (*Segment, error) {
	s := &Segment{name: name, data: b}
	size := uint64(len(b))
	if size < minFileSize {
		return nil, s.corrupt(size, "file is %d bytes, smaller than the minimum %d", size, minFileSize)
	}
	if string(b[:len(headerMagic)]) != headerMagic {
		return nil, s.corrupt(0, "bad header magic %q", b[:len(headerMagic)])
	}
	if v := b[len(headerMagic)]; v != FormatVersion {
		return nil, s.corrupt(uint64(len(headerMagic)), "unsupported header format version %d", v)
	}

	// Footer.
	fo := size - footerSize
	ft := b[fo:]
	if string(ft[ftMagic:]) != footerMagic {
		return nil, s.corrupt(fo+ftMagic, "bad footer magic %q (truncated or not a segment)", ft[ftMagic:])
	}
	if got, want := crc(ft[:ftCRC]), le.Uint32(ft[ftCRC:]); got != want {
		return nil, s.corrupt(fo, "footer checksum mismatch (stored %#08x, computed %#08x)", want, got)
	}
	if v := le.Uint32(ft[ftVersion:]); v != FormatVersion {
		return nil, s.corrupt(fo+ftVersion, "unsupported footer format version %d", v)
	}
	tocOff, tocLen := le.Uint64(ft[ftTOCOffset:]), uint64(le.Uint32(ft[ftTOCLength:]))
	if tocOff < headerSize || tocOff > fo || fo-tocOff != tocLen || tocOff%8 != 0 || tocLen < tocHeaderSize {
		return nil, s.corrupt(fo, "TOC [%d, +%d) does not end at the footer (offset %d)", tocOff, tocLen, fo)
	}
	toc := b[tocOff:fo]
	if got, want := crc(toc), le.Uint32(ft[ftTOCCRC:]); got != want {
		return nil, s.corrupt(tocOff, "TOC checksum mismatch (stored %#08x, computed %#08x)", want, got)
	}
	s.tocOff = tocOff
	s.info.ID = le.Uint64(ft[ftSegmentID:])
	s.info.Size = int64(size)

	// TOC entries: sections follow each other in TOC order, each at the next
	// 8-byte boundary, with zero padding, and the TOC follows the last one.
	n := uint64(le.Uint32(toc))
	if (tocLen-tocHeaderSize)%tocEntrySize != 0 || (tocLen-tocHeaderSize)/tocEntrySize != n {
		return nil, s.corrupt(tocOff, "TOC of %d bytes cannot hold %d entries", tocLen, n)
	}
	s.toc = make([]tocEntry, n)
	prevEnd := uint64(headerSize)
	for i := range s.toc {
		at := tocOff + tocHeaderSize + uint64(i)*tocEntrySize
		e := b[at : at+tocEntrySize]
		t := tocEntry{kind: le.Uint16(e), flags: le.Uint16(e[2:]), ws: le.Uint32(e[4:]),
			off: le.Uint64(e[8:]), length: le.Uint64(e[16:]), crc: le.Uint32(e[24:])}
		switch {
		case t.kind == 0:
			return nil, s.corrupt(at, "TOC entry %d has section kind 0", i)
		case t.flags&^knownFlags != 0:
			return nil, s.corrupt(at, "TOC entry %d (%s) has unknown flags %#04x", i, kindName(t.kind), t.flags)
		case t.off != align8(prevEnd):
			return nil, s.corrupt(at, "section %d (%s) starts at %d, want %d", i, kindName(t.kind), t.off, align8(prevEnd))
		case t.length > tocOff-t.off:
			return nil, s.corrupt(at, "section %d (%s) [%d, +%d) runs into the TOC at %d", i, kindName(t.kind), t.off, t.length, tocOff)
		}
		if err := s.checkPadding(prevEnd, t.off); err != nil {
			return nil, err
		}
		s.toc[i] = t
		prevEnd = t.off + t.length
	}
	if align8(prevEnd) != tocOff {
		return nil, s.corrupt(tocOff, "TOC starts at %d, want %d (end of the last section)", tocOff, align8(prevEnd))
	}
	if err := s.checkPadding(prevEnd, tocOff); err != nil {
		return nil, err
	}

	// WORKSPACES first: per-workspace sections are checked against it.
	wsi := -1
	for i, t := range s.toc {
		if t.kind == KindWorkspaces {
			if wsi >= 0 {
				return nil, s.corrupt(s.tocEntryAt(i), "second WORKSPACES section")
			}
			wsi = i
		}
	}
	if wsi < 0 {
		return nil, s.corrupt(tocOff, "no WORKSPACES section")
	}
	if err := s.checkSection(wsi); err != nil {
		return nil, err
	}
	if err := s.parseWorkspaces(s.toc[wsi]); err != nil {
		return nil, err
	}

	// Assign sections; check the checksum of every non-bulk one.
	nws := uint64(len(s.ws))
	seen := make(map[[2]uint64]bool)
	haveIndex := false
	for i, t := range s.toc {
		at := s.tocEntryAt(i)
		sec := span64{t.off, t.length}
		perWS := false
		switch t.kind {
		case KindWorkspaces:
			continue // done above
		case KindArtifactIDIndex:
			if t.ws != allWorkspaces {
				return nil, s.corrupt(at, "segment-wide section %s has workspace index %d", kindName(t.kind), t.ws)
			}
			if haveIndex {
				return nil, s.corrupt(at, "second %s section", kindName(t.kind))
			}
			haveIndex, s.idIndex = true, sec
		case KindArtifacts, KindArtifactTable, KindIdempotency, KindSpans, KindSpanText:
			perWS = true
		default: // extension, reserved or unknown: must be well formed
			if t.ws != allWorkspaces && uint64(t.ws) >= nws {
				return nil, s.corrupt(at, "section %s has workspace index %d, segment has %d workspaces", kindName(t.kind), t.ws, nws)
			}
			if t.flags&flagDeferredCRC == 0 {
				if err := s.checkSection(i); err != nil {
					return nil, err
				}
			}
			if t.ws != allWorkspaces && ExtensionKind(t.kind) && t.flags&flagDeferredCRC == 0 {
				w := &s.ws[t.ws]
				if _, dup := w.extra[t.kind]; dup {
					return nil, s.corrupt(at, "second %s section for workspace %d", kindName(t.kind), t.ws)
				}
				if w.extra == nil {
					w.extra = map[uint16]span64{}
				}
				w.extra[t.kind] = sec
			}
			continue
		}
		if perWS {
			if uint64(t.ws) >= nws {
				return nil, s.corrupt(at, "section %s has workspace index %d, segment has %d workspaces", kindName(t.kind), t.ws, nws)
			}
			key := [2]uint64{uint64(t.kind), uint64(t.ws)}
			if seen[key] {
				return nil, s.corrupt(at, "second %s section for workspace %d", kindName(t.kind), t.ws)
			}
			seen[key] = true
			w := &s.ws[t.ws]
			switch t.kind {
			case KindArtifacts:
				w.artifacts = sec
			case KindArtifactTable:
				w.table = sec
			case KindIdempotency:
				w.idem = sec
			case KindSpans:
				w.spans = sec
			case KindSpanText:
				w.text = sec
			}
		}
		if t.kind != KindArtifacts && t.kind != KindSpanText {
			if err := s.checkSection(i); err != nil {
				return nil, err
			}
		}
	}
	if !haveIndex {
		return nil, s.corrupt(tocOff, "no ARTIFACT_ID_INDEX section")
	}

	// Section sizes must agree with the workspace directory.
	var total uint64
	for i := range s.ws {
		w := &s.ws[i]
		for _, k := range []uint16{KindArtifacts, KindArtifactTable, KindIdempotency, KindSpans, KindSpanText} {
			if !seen[[2]uint64{uint64(k), uint64(i)}] {
				return nil, s.corrupt(tocOff, "workspace %d (%q/%q) has no %s section", i, w.Tenant, w.Workspace, kindName(k))
			}
		}
		na, nsp := uint64(w.Artifacts), uint64(w.Spans)
		if w.table.len != na*artRowSize {
			return nil, s.corrupt(w.table.off, "ARTIFACT_TABLE of workspace %d is %d bytes, want %d for %d artifacts", i, w.table.len, na*artRowSize, na)
		}
		if w.spans.len != nsp*spanRowSize {
			return nil, s.corrupt(w.spans.off, "SPANS of workspace %d is %d bytes, want %d for %d spans", i, w.spans.len, nsp*spanRowSize, nsp)
		}
		if w.idem.len < idemHeaderSize {
			return nil, s.corrupt(w.idem.off, "IDEMPOTENCY of workspace %d is %d bytes, too small for its header", i, w.idem.len)
		}
		w.idemCount = uint64(le.Uint32(b[w.idem.off:]))
		if w.idemCount > (w.idem.len-idemHeaderSize)/idemRowSize {
			return nil, s.corrupt(w.idem.off, "IDEMPOTENCY of workspace %d: %d rows do not fit in %d bytes", i, w.idemCount, w.idem.len)
		}
		var minSeq, maxSeq uint64
		if na > 0 {
			minSeq = le.Uint64(b[w.table.off+artRowSeq:])
			maxSeq = le.Uint64(b[w.table.end()-artRowSize+artRowSeq:])
		}
		if minSeq != w.MinSeq || maxSeq != w.MaxSeq {
			return nil, s.corrupt(w.table.off, "workspace %d: seq range [%d, %d] in WORKSPACES, [%d, %d] in its ARTIFACT_TABLE", i, w.MinSeq, w.MaxSeq, minSeq, maxSeq)
		}
		if na > 0 {
			if s.info.Artifacts == 0 || w.MinSeq < s.info.MinSeq {
				s.info.MinSeq = w.MinSeq
			}
			s.info.MaxSeq = max(s.info.MaxSeq, w.MaxSeq)
		}
		total += na
		s.info.Artifacts += w.Artifacts
		s.info.Spans += w.Spans
	}
	if s.idIndex.len != total*idRowSize {
		return nil, s.corrupt(s.idIndex.off, "ARTIFACT_ID_INDEX is %d bytes, want %d for %d artifacts", s.idIndex.len, total*idRowSize, total)
	}
	s.info.Workspaces = len(s.ws)
	return s, nil
}

func (s *Segment) tocEntryAt(i int) uint64 {
	return s.tocOff + tocHeaderSize + uint64(i)*tocEntrySize
}

// checkPadding requires the bytes [from, to) to be zero, so that no byte of
// the file escapes checking.
func (s *Segment) checkPadding(from, to uint64) error {
	for i := from; i < to; i++ {
		if s.data[i] != 0 {
			return s.corrupt(i, "non-zero padding byte %#02x", s.data[i])
		}
	}
	return nil
}

// checkSection verifies the checksum of TOC entry i's section.
func (s *Segment) checkSection(i int) error {
	t := s.toc[i]
	if got := crc(s.data[t.off : t.off+t.length]); got != t.crc {
		return s.corrupt(t.off, "%s section (workspace %s) checksum mismatch (stored %#08x, computed %#08x)",
			kindName(t.kind), wsLabel(t.ws), t.crc, got)
	}
	return nil
}

func wsLabel(ws uint32) string {
	if ws == allWorkspaces {
		return "all"
	}
	return fmt.Sprint(ws)
}

// parseWorkspaces decodes the WORKSPACES section into s.ws.
func (s *Segment) parseWorkspaces(t tocEntry) error {
	b := s.data[t.off : t.off+t.length]
	if len(b) < wsHeaderSize {
		return s.corrupt(t.off, "WORKSPACES section of %d bytes is too small", len(b))
	}
	n := uint64(le.Uint32(b))
	if n > uint64(len(b)-wsHeaderSize)/wsEntryMinSize {
		return s.corrupt(t.off, "WORKSPACES section of %d bytes cannot hold %d workspaces", len(b), n)
	}
	s.ws = make([]wsMeta, n)
	p := uint64(wsHeaderSize)
	str := func() (string, bool) {
		if uint64(len(b))-p < 4 {
			return "", false
		}
		l := uint64(le.Uint32(b[p:]))
		if l > uint64(len(b))-p-4 {
			return "", false
		}
		v := string(b[p+4 : p+4+l])
		p += 4 + l
		return v, true
	}
	for i := range s.ws {
		at := t.off + p
		tenant, ok1 := str()
		ws, ok2 := str()
		if !ok1 || !ok2 || uint64(len(b))-p < 24 {
			return s.corrupt(at, "WORKSPACES entry %d is truncated", i)
		}
		w := &s.ws[i]
		w.Tenant, w.Workspace = tenant, ws
		na, nsp := le.Uint32(b[p:]), le.Uint32(b[p+4:])
		if uint64(na) > math.MaxInt || uint64(nsp) > math.MaxInt { // 32-bit platforms
			return s.corrupt(at, "WORKSPACES entry %d: counts overflow int", i)
		}
		w.Artifacts, w.Spans = int(na), int(nsp)
		w.MinSeq, w.MaxSeq = le.Uint64(b[p+8:]), le.Uint64(b[p+16:])
		p += 24
		if i > 0 && compareWS(s.ws[i-1].Tenant, s.ws[i-1].Workspace, tenant, ws) >= 0 {
			return s.corrupt(at, "WORKSPACES entry %d (%q/%q) is not after %q/%q", i, tenant, ws, s.ws[i-1].Tenant, s.ws[i-1].Workspace)
		}
	}
	if p != uint64(len(b)) {
		return s.corrupt(t.off+p, "WORKSPACES section has %d trailing bytes", uint64(len(b))-p)
	}
	return nil
}
