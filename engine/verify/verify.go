// Package verify checks a closed data directory without changing it and
// without opening the engine (loci verify, and loci restore after its
// copy): the manifest, the control files, every byte of every segment, every
// WAL record from the checkpoint on. It judges by the engine's rules (the
// same lock, the same missing-manifest rule, the same decoders), which
// live in the engine's rooms; it imports no engine.
package verify

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/artmeta"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/wal"
)

// Report is the outcome of Dir. Faults are damage; Warnings are
// states recovery handles by itself (a torn WAL tail, an orphan file).
type Report struct {
	Segments int `json:"segments"`
	// Artifacts counts the artifacts whose bytes are stored (segments and
	// WAL), outside erased workspaces; artifacts erased one by one (or by
	// retention) count until compaction removes their bytes.
	Artifacts  int `json:"artifacts"`
	Spans      int `json:"spans"`
	WALFiles   int `json:"wal_files"`
	WALRecords int `json:"wal_records"`
	Tombstones int `json:"tombstones"`
	// ControlBytes is the size of the control snapshot (tenants, keys, usage, jobs); 0: none.
	ControlBytes int      `json:"control_bytes"`
	Bytes        int64    `json:"bytes"`
	Faults       []string `json:"faults"`
	Warnings     []string `json:"warnings"`
}

// Dir checks a closed data directory without changing it: the manifest,
// every byte of every segment (checksums, decoding, content hashes, span and
// index cross-references), every WAL record from the checkpoint on, sequence
// order across segments and WAL, and that no artifact id appears twice. It
// takes the directory lock, so it refuses a directory a server has open.
func Dir(dir string) (*Report, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	lock, err := manifest.Lock(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	r := &Report{Faults: []string{}, Warnings: []string{}}
	fault := func(format string, args ...any) { r.Faults = append(r.Faults, fmt.Sprintf(format, args...)) }

	m, err := manifest.Read(dir)
	switch {
	case err != nil:
		fault("%v", err)
		return r, nil
	case m == nil:
		// Judge it as Open does: refuse what Open refuses, and report as
		// warnings what Open repairs (the orphans are listed below).
		if err := manifest.CheckMissing(dir); err != nil {
			fault("%v", err)
			return r, nil
		}
		m = &manifest.Manifest{NextSegmentID: 1, Checkpoint: 1}
		r.Warnings = append(r.Warnings, "no MANIFEST: a data directory never flushed, or made before one was written at creation (an empty one is written at next open)")
	}
	r.Tombstones = len(m.Tombstones)
	if snap, err := manifest.ReadFramed(dir, manifest.ControlName, manifest.ControlMagic); err != nil {
		fault("%v", err)
	} else {
		r.ControlBytes = len(snap)
	}
	if _, err := manifest.ReadFramed(dir, manifest.ControlPayloadsName, manifest.ControlPayloadsMagic); err != nil {
		fault("%v", err)
	}
	hidden := map[wsKey]uint64{}
	for _, t := range m.Tombstones {
		hidden[wsKey{t.Tenant, t.Workspace}] = t.Seq
	}

	ids := map[uuid.UUID]string{}
	seen := func(id uuid.UUID, where string) {
		if prev, ok := ids[id]; ok {
			fault("artifact %s appears twice: in %s and in %s", id, prev, where)
			return
		}
		ids[id] = where
	}
	listed := map[string]bool{}
	var prevMax uint64
	for _, e := range m.Segments {
		name := segment.FileName(e.ID)
		listed[name] = true
		path := filepath.Join(dir, manifest.SegmentDir, name)
		if e.ID >= m.NextSegmentID {
			fault("manifest: segment %d is not below next segment id %d", e.ID, m.NextSegmentID)
		}
		if e.MaxSeq > 0 { // a segment of feedback events only has no artifact seq range
			if e.MinSeq <= prevMax {
				fault("manifest: segment %s seq range [%d,%d] overlaps or precedes the previous one (max %d)", name, e.MinSeq, e.MaxSeq, prevMax)
			}
			prevMax = e.MaxSeq
		}
		if e.MaxSeq > m.LastSeq {
			fault("manifest: segment %s max seq %d above last seq %d", name, e.MaxSeq, m.LastSeq)
		}
		st, err := os.Stat(path)
		if err != nil {
			fault("segment listed in manifest: %v", err)
			continue
		}
		if st.Size() != e.Size {
			fault("segment %s is %d bytes, manifest says %d", path, st.Size(), e.Size)
			continue
		}
		r.Bytes += st.Size()
		s, err := segment.Open(path)
		if err != nil {
			fault("%v", err)
			continue
		}
		r.Segments++
		if err := s.Verify(); err != nil {
			fault("%v", err)
			s.Close()
			continue
		}
		info := s.Info()
		if info.MinSeq != e.MinSeq || info.MaxSeq != e.MaxSeq {
			fault("segment %s seq range [%d,%d] differs from manifest [%d,%d]", path, info.MinSeq, info.MaxSeq, e.MinSeq, e.MaxSeq)
		}
		for wi, w := range s.Workspaces() {
			k := wsKey{w.Tenant, w.Workspace}
			if b, ok := s.Section(wi, segment.KindFeedback); ok {
				if _, err := record.DecodeFeedbackSection(b); err != nil {
					fault("segment %s: workspace %d: %v", path, wi, err)
				}
			}
			if b, ok := s.Section(wi, segment.KindReceipts); ok {
				if _, err := record.DecodeReceiptSection(b); err != nil {
					fault("segment %s: workspace %d: %v", path, wi, err)
				}
			}
			meta, hasMeta := s.Section(wi, segment.KindArtifactMeta)
			ord := 0
			s.Artifacts(wi, func(a *artifact.Artifact) error {
				seen(a.ID, path)
				if t, ok := hidden[k]; !ok || a.Seq >= t {
					r.Artifacts++
				}
				if hasMeta { // each row must be its artifact's metadata
					row, err := artmeta.RowAt(meta, w.Artifacts, ord)
					var m *artifact.Artifact
					if err == nil {
						m, err = artmeta.DecodeRow(row, a.ID, a.Seq)
					}
					full := *a
					full.Payload = nil
					if err == nil && !reflect.DeepEqual(*m, full) {
						err = fmt.Errorf("ARTIFACT_META: row %d differs from artifact %s", ord, a.ID)
					}
					if err != nil {
						fault("segment %s: workspace %d: %v", path, wi, err)
					}
				}
				ord++
				return nil
			})
			s.Spans(wi, func(sp artifact.Span) error { r.Spans++; return nil })
		}
		s.Close()
	}
	entries, _ := os.ReadDir(filepath.Join(dir, manifest.SegmentDir))
	for _, e := range entries {
		if !listed[e.Name()] {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s is not listed in the manifest (left by an interrupted flush or compaction; would be removed at next open)", filepath.Join(dir, manifest.SegmentDir, e.Name())))
		}
	}

	verifyWAL(filepath.Join(dir, manifest.WALDir), m, r, seen, fault)
	sort.Strings(r.Warnings)
	return r, nil
}

// wsKey names a workspace.
type wsKey struct{ Tenant, Workspace string }

func verifyWAL(dir string, m *manifest.Manifest, r *Report, seen func(uuid.UUID, string), fault func(string, ...any)) {
	files, err := wal.Files(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			fault("wal: %v", err)
		}
		return
	}
	var live []int
	for _, f := range files {
		if f >= m.Checkpoint {
			live = append(live, f)
		} else {
			r.Warnings = append(r.Warnings, fmt.Sprintf("wal file %s is before the checkpoint %d (removed at next open)", wal.FileName(f), m.Checkpoint))
		}
	}
	if len(live) > 0 && live[0] != m.Checkpoint {
		fault("wal: checkpoint file %s is missing (first file is %s)", wal.FileName(m.Checkpoint), wal.FileName(live[0]))
	}
	lastSeq := m.LastSeq
	for i, f := range live {
		if i > 0 && f != live[i-1]+1 {
			fault("wal: gap between %s and %s", wal.FileName(live[i-1]), wal.FileName(f))
		}
		path := filepath.Join(dir, wal.FileName(f))
		st, _ := os.Stat(path)
		if st != nil {
			r.Bytes += st.Size()
		}
		r.WALFiles++
		err := wal.ScanFile(path, func(off int64, rec wal.Record) error {
			r.WALRecords++
			if rec.Seq <= lastSeq {
				fault("wal: %s at offset %d: seq %d does not follow %d", path, off, rec.Seq, lastSeq)
			}
			lastSeq = rec.Seq
			switch record.Type(rec.Type) {
			case record.TypeArtifact:
				a, spans, _, _, err := record.DecodeArtifact(rec.Payload)
				if err != nil {
					fault("wal: %s at offset %d: %v", path, off, err)
					return nil
				}
				if artifact.ContentHash(a.Payload) != a.ContentHash {
					fault("wal: %s at offset %d: artifact %s content hash mismatch", path, off, a.ID)
				}
				seen(a.ID, fmt.Sprintf("%s at offset %d", path, off))
				r.Artifacts++
				r.Spans += len(spans)
			case record.TypeEraseWorkspace:
				if _, _, err := record.DecodeEraseWorkspace(rec.Payload); err != nil {
					fault("wal: %s at offset %d: %v", path, off, err)
				}
			case record.TypeEraseArtifact:
				if _, err := record.DecodeEraseArtifact(rec.Payload); err != nil {
					fault("wal: %s at offset %d: %v", path, off, err)
				}
			case record.TypeRetention:
				if _, err := record.DecodeRetention(rec.Payload); err != nil {
					fault("wal: %s at offset %d: %v", path, off, err)
				}
			case record.TypeVectors:
				if _, err := record.DecodeVectors(rec.Payload); err != nil {
					fault("wal: %s at offset %d: %v", path, off, err)
				}
			case record.TypeFeedback:
				if _, err := record.DecodeFeedback(rec.Payload); err != nil {
					fault("wal: %s at offset %d: %v", path, off, err)
				}
			case record.TypeReceipt:
				if _, err := record.DecodeReceipt(rec.Payload, false); err != nil {
					fault("wal: %s at offset %d: %v", path, off, err)
				}
			default:
				if !record.Type(rec.Type).IsControl() { // control payloads are the control state's to check
					fault("wal: %s at offset %d: unknown record type %d", path, off, rec.Type)
				}
			}
			return nil
		})
		var ce *wal.CorruptionError
		switch {
		case err == nil:
		case errors.As(err, &ce) && i == len(live)-1 && ce.Next == 0:
			// Damage with nothing valid after it at the end of the last
			// file is what a crash during a write leaves; open cuts it.
			// Damage followed by a valid record is a fault: open refuses it.
			r.Warnings = append(r.Warnings, fmt.Sprintf("%v (torn tail of the last WAL file: unacknowledged, truncated at next open)", err))
		default:
			fault("%v", err)
		}
	}
}
