package segment

import (
	"bytes"

	"github.com/loci-memory/loci/artifact"
)

// Verify reads every byte of the segment and checks it: the checksum of every
// section (the bulk ones included), every artifact entry (checksum,
// decompression, decoding, ContentHash(Payload) == ContentHash, id, seq,
// tenant and workspace as the tables say, entries contiguous), every span
// (text checksum, artifact in range, Start <= End, ordinals 0, 1, 2, ... per
// artifact, texts contiguous), the idempotency tables and the artifact id
// index (sorted, complete, pointing at the right artifact). It returns the
// first fault found, as a *CorruptionError.
func (s *Segment) Verify() error {
	if err := s.rlock(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	for i := range s.toc {
		if err := s.checkSection(i); err != nil {
			return err
		}
	}
	for i := range s.ws {
		if err := s.verifyWorkspace(i); err != nil {
			return err
		}
	}
	return s.verifyIDIndex()
}

func (s *Segment) verifyWorkspace(wsIdx int) error {
	w := &s.ws[wsIdx]
	na := uint64(w.Artifacts)
	keys := make([]string, na)
	var entryEnd, spanNext, prevSeq uint64
	for ord := uint64(0); ord < na; ord++ {
		rowAt := w.table.off + ord*artRowSize
		if rel := le.Uint64(s.data[rowAt+artRowEntry:]); rel != entryEnd {
			return s.corrupt(rowAt, "artifact %d: entry at section offset %d, want %d (entries must be contiguous)", ord, rel, entryEnd)
		}
		a, size, err := s.readArtifact(w, ord)
		if err != nil {
			return err
		}
		entryAt := w.artifacts.off + entryEnd
		entryEnd += size
		if artifact.ContentHash(a.Payload) != a.ContentHash {
			return s.corrupt(entryAt, "artifact %s: ContentHash does not match its payload", a.ID)
		}
		if ord > 0 && a.Seq <= prevSeq {
			return s.corrupt(rowAt, "artifact %d: seq %d not after %d", ord, a.Seq, prevSeq)
		}
		prevSeq = a.Seq
		keys[ord] = a.IdempotencyKey

		first, n, err := s.spanRange(w, ord)
		if err != nil {
			return err
		}
		if first != spanNext {
			return s.corrupt(rowAt, "artifact %d: first span %d, want %d (spans must be grouped in artifact order)", ord, first, spanNext)
		}
		spanNext += n
	}
	if entryEnd != w.artifacts.len {
		return s.corrupt(w.artifacts.off+entryEnd, "ARTIFACTS section of workspace %d has %d bytes after its last entry", wsIdx, w.artifacts.len-entryEnd)
	}
	if spanNext != uint64(w.Spans) {
		return s.corrupt(w.table.off, "workspace %d: artifacts own %d spans, SPANS has %d", wsIdx, spanNext, w.Spans)
	}

	// Spans: walk them in file order along with the artifact that owns them.
	var textEnd, ord, inArt uint64
	for i := uint64(0); i < uint64(w.Spans); i++ {
		for {
			if ord >= na { // unreachable after the checks above; keeps reads in range
				return s.corrupt(w.spans.off+i*spanRowSize, "span %d has no artifact", i)
			}
			first, n, _ := s.spanRange(w, ord)
			if i < first+n {
				inArt = i - first
				break
			}
			ord++
		}
		rowAt := w.spans.off + i*spanRowSize
		sp, spOrd, err := s.readSpan(w, i)
		if err != nil {
			return err
		}
		switch {
		case spOrd != ord:
			return s.corrupt(rowAt, "span %d: artifact ordinal %d, want %d", i, spOrd, ord)
		case uint64(sp.Ordinal) != inArt:
			return s.corrupt(rowAt, "span %d: ordinal %d, want %d", i, sp.Ordinal, inArt)
		case sp.Start > sp.End:
			return s.corrupt(rowAt, "span %d: start %d after end %d", i, sp.Start, sp.End)
		}
		if toff := le.Uint64(s.data[rowAt+spanRowTextOff:]); toff != textEnd {
			return s.corrupt(rowAt, "span %d: text at offset %d, want %d (texts must be contiguous)", i, toff, textEnd)
		}
		textEnd += uint64(len(sp.Text))
	}
	if textEnd != w.text.len {
		return s.corrupt(w.text.off+textEnd, "SPAN_TEXT of workspace %d has %d bytes after the last span's text", wsIdx, w.text.len-textEnd)
	}

	// Idempotency table: sorted, keys contiguous, each naming an artifact
	// that carries that key, and every keyed artifact present.
	var keyed uint64
	for _, k := range keys {
		if k != "" {
			keyed++
		}
	}
	if w.idemCount != keyed {
		return s.corrupt(w.idem.off, "IDEMPOTENCY of workspace %d has %d keys, its artifacts have %d", wsIdx, w.idemCount, keyed)
	}
	var prev []byte
	var keyEnd uint64
	for i := uint64(0); i < w.idemCount; i++ {
		rowAt := w.idem.off + idemHeaderSize + i*idemRowSize
		ord, key, err := s.idemRow(w, i)
		if err != nil {
			return err
		}
		switch {
		case le.Uint64(s.data[rowAt+8:]) != keyEnd:
			return s.corrupt(rowAt, "idempotency key %d not contiguous with the previous one", i)
		case i > 0 && bytes.Compare(prev, key) >= 0:
			return s.corrupt(rowAt, "idempotency key %d (%q) not after %q", i, key, prev)
		case uint64(ord) >= na:
			return s.corrupt(rowAt, "idempotency key %d: artifact ordinal %d out of range", i, ord)
		case keys[ord] != string(key):
			return s.corrupt(rowAt, "idempotency key %q points at artifact %d, whose key is %q", key, ord, keys[ord])
		}
		prev = key
		keyEnd += uint64(len(key))
	}
	if blob := w.idem.len - idemHeaderSize - w.idemCount*idemRowSize; keyEnd != blob {
		return s.corrupt(w.idem.off, "IDEMPOTENCY of workspace %d: key blob of %d bytes, keys use %d", wsIdx, blob, keyEnd)
	}
	return nil
}

// verifyIDIndex checks that the id index is strictly sorted and that every row
// names the artifact (and seq) found at its (ws, ordinal). With the row count
// equal to the number of artifacts (checked by Open), it is then complete.
func (s *Segment) verifyIDIndex() error {
	n := s.idIndex.len / idRowSize
	for i := uint64(0); i < n; i++ {
		at := s.idIndex.off + i*idRowSize
		row := s.data[at : at+idRowSize]
		if i > 0 && bytes.Compare(s.data[at-idRowSize:at-idRowSize+16], row[:16]) >= 0 {
			return s.corrupt(at, "artifact id index row %d is not after the previous row", i)
		}
		ws, ord := uint64(le.Uint32(row[16:])), uint64(le.Uint32(row[20:]))
		if ws >= uint64(len(s.ws)) || ord >= uint64(s.ws[ws].Artifacts) {
			return s.corrupt(at, "artifact id index row %d points at missing artifact (%d, %d)", i, ws, ord)
		}
		t := s.data[s.ws[ws].table.off+ord*artRowSize:]
		if !bytes.Equal(t[:16], row[:16]) || le.Uint64(t[artRowSeq:]) != le.Uint64(row[24:]) {
			return s.corrupt(at, "artifact id index row %d disagrees with artifact (%d, %d)", i, ws, ord)
		}
	}
	return nil
}
