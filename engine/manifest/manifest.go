// Package manifest holds the MANIFEST, the durable root of the engine's
// state (which segments are live, where WAL replay starts, workspace
// erasures and data versions, the embedder, retention), with its binary
// codec, byte-exact with docs/format/manifest.md, and the compaction
// planner, which chooses the runs of segments to rewrite.
//
// Both are pure of the engine's locks and files beyond the MANIFEST itself,
// so they are tested by table here; the engine decides when to write a
// manifest and runs the compactions. It imports no part of the engine.
package manifest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/vfs"
)

// FileName is the file that says which segments are live and where WAL
// replay starts. It is replaced atomically (write temp, fsync, rename, fsync dir).
const FileName = "MANIFEST"

// The rest of a data directory's layout (docs/format/manifest.md): the
// directories of the WAL and segment files the manifest names, and the
// control files written before every manifest. The engine writes them;
// backup copies them.
const (
	WALDir              = "wal"
	SegmentDir          = "segments"
	ControlName         = "CONTROL"          // the latest control snapshot
	ControlPayloadsName = "CONTROL_PAYLOADS" // the latest control payloads
	// TokenRowDir holds the late-interaction token rows of the segments,
	// TokenRowDir/<model>/<segment>.rows (docs/format/tokenrows.md):
	// derived data, rebuilt when missing.
	TokenRowDir = "tokenrows"
)

// TokenRowFile is the name of the token-row file of the segment file named
// seg: seg without its extension, then ".rows".
func TokenRowFile(seg string) string {
	return strings.TrimSuffix(seg, filepath.Ext(seg)) + ".rows"
}

var magic = [8]byte{'L', 'O', 'C', 'I', 'M', 'A', 'N', 0x01}

// currentVersion is the version written. Version 1 (still read) has no
// embedder field; version 2 (still read) has no erased artifacts; version 3
// (still read) has no retention.
const currentVersion = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Manifest is the durable root of the engine's state: everything not in it is
// recovered by replaying the WAL from Checkpoint.
type Manifest struct {
	NextSegmentID uint64
	Checkpoint    int    // index of the first WAL file replay needs; older files are garbage
	LastSeq       uint64 // highest WAL sequence number whose effects live in segments
	Segments      []Segment
	Tombstones    []Tombstone   // erased workspaces: the newest erasure of each, kept as the fence of jobs accepted before it
	Versions      []DataVersion // data version of every workspace ever changed
	// Embedder names the vector space of every vector in the directory:
	// the embedder's model, or "none" for lexical-only; "" only in a
	// version 1 manifest or a new directory (not recorded yet).
	Embedder    string
	EmbedderDim int
	// Retention lists the workspaces whose retention is set
	// (engine/retention.go).
	Retention []Retention
}

// DataVersion is a workspace's data version: the sequence number of its latest
// change (ingest, feedback, erasure). Receipt ids derive from it, so it is
// kept here and never moves backwards, whatever compaction removes.
type DataVersion struct {
	Tenant, Workspace string
	Seq               uint64
	Newest            int64 // newest visible artifact time (Unix µs), the default as_of of packs
	// Erased lists the workspace's erased artifacts that a segment may still
	// hold, in seq order (see engine/erase_artifact.go). Never modified in place:
	// a change replaces the slice, as DataVersion values are copied.
	Erased []ErasedArtifact
}

// ErasedArtifact names an erased artifact by the seq of the record that
// stored it and its id.
type ErasedArtifact struct {
	Seq uint64
	ID  [16]byte
}

// Segment names a live segment; Segments are kept in ascending sequence order.
type Segment struct {
	ID             uint64
	Size           int64
	MinSeq, MaxSeq uint64
}

// Tombstone hides every artifact of a workspace with Seq < Seq.
type Tombstone struct {
	Tenant, Workspace string
	Seq               uint64
}

// Retention is a workspace's retention setting and cutoff.
type Retention struct {
	Tenant, Workspace string
	Days              uint64
	Cutoff            int64 // Unix µs; artifacts older are erased. math.MinInt64: none yet
}

// Encode returns the MANIFEST file's bytes: tombstones, data versions and
// retention sorted by (tenant, workspace), so that equal states encode to
// equal bytes.
func (m *Manifest) Encode() []byte {
	body := binary.AppendUvarint(nil, m.NextSegmentID)
	body = binary.AppendUvarint(body, uint64(m.Checkpoint))
	body = binary.AppendUvarint(body, m.LastSeq)
	body = binary.AppendUvarint(body, uint64(len(m.Segments)))
	for _, s := range m.Segments {
		body = binary.AppendUvarint(body, s.ID)
		body = binary.AppendUvarint(body, uint64(s.Size))
		body = binary.AppendUvarint(body, s.MinSeq)
		body = binary.AppendUvarint(body, s.MaxSeq)
	}
	ts := append([]Tombstone(nil), m.Tombstones...)
	sort.Slice(ts, func(i, j int) bool { return wsLess(ts[i].Tenant, ts[i].Workspace, ts[j].Tenant, ts[j].Workspace) })
	body = binary.AppendUvarint(body, uint64(len(ts)))
	for _, t := range ts {
		body = codec.AppendString(body, t.Tenant)
		body = codec.AppendString(body, t.Workspace)
		body = binary.AppendUvarint(body, t.Seq)
	}
	vs := append([]DataVersion(nil), m.Versions...)
	sort.Slice(vs, func(i, j int) bool { return wsLess(vs[i].Tenant, vs[i].Workspace, vs[j].Tenant, vs[j].Workspace) })
	body = binary.AppendUvarint(body, uint64(len(vs)))
	for _, v := range vs {
		body = codec.AppendString(body, v.Tenant)
		body = codec.AppendString(body, v.Workspace)
		body = binary.AppendUvarint(body, v.Seq)
		body = binary.AppendVarint(body, v.Newest)
	}
	body = codec.AppendString(body, m.Embedder)
	body = binary.AppendUvarint(body, uint64(m.EmbedderDim))
	// Version 3: erased artifacts per workspace, workspaces in the order above.
	n := 0
	for _, v := range vs {
		if len(v.Erased) > 0 {
			n++
		}
	}
	body = binary.AppendUvarint(body, uint64(n))
	for _, v := range vs {
		if len(v.Erased) == 0 {
			continue
		}
		body = codec.AppendString(body, v.Tenant)
		body = codec.AppendString(body, v.Workspace)
		body = binary.AppendUvarint(body, uint64(len(v.Erased)))
		for _, e := range v.Erased {
			body = binary.AppendUvarint(body, e.Seq)
			body = append(body, e.ID[:]...)
		}
	}
	// Version 4: retention per workspace, by (tenant, workspace).
	rs := append([]Retention(nil), m.Retention...)
	sort.Slice(rs, func(i, j int) bool { return wsLess(rs[i].Tenant, rs[i].Workspace, rs[j].Tenant, rs[j].Workspace) })
	body = binary.AppendUvarint(body, uint64(len(rs)))
	for _, r := range rs {
		body = codec.AppendString(body, r.Tenant)
		body = codec.AppendString(body, r.Workspace)
		body = binary.AppendUvarint(body, r.Days)
		body = binary.AppendVarint(body, r.Cutoff)
	}
	out := make([]byte, 0, 20+len(body))
	out = append(out, magic[:]...)
	out = binary.LittleEndian.AppendUint32(out, currentVersion)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
	out = append(out, body...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out[8:], castagnoli))
}

// wsLess orders workspaces by (tenant, workspace), so that equal states
// encode to equal bytes.
func wsLess(t1, w1, t2, w2 string) bool {
	if t1 != t2 {
		return t1 < t2
	}
	return w1 < w2
}

// Error reports a damaged manifest with the offset of the fault.
type Error struct {
	File   string
	Offset int64
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("manifest %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Is reports an Error as corruption: errors.Is(err, codec.ErrCorrupt).
func (e *Error) Is(target error) bool { return target == codec.ErrCorrupt }

// Decode decodes a MANIFEST file's bytes; file names it in errors. Every
// fault is an *Error. Tombstones, data versions and retention must be as
// Encode writes them: sorted by (tenant, workspace), one per workspace.
func Decode(file string, b []byte) (*Manifest, error) {
	bad := func(off int, reason string) error {
		return &Error{File: file, Offset: int64(off), Reason: reason}
	}
	if len(b) < 20 {
		return nil, bad(0, fmt.Sprintf("file is %d bytes, shorter than the 20-byte frame", len(b)))
	}
	if [8]byte(b[:8]) != magic {
		return nil, bad(0, "bad magic")
	}
	version := binary.LittleEndian.Uint32(b[8:])
	if version < 1 || version > currentVersion {
		return nil, bad(8, fmt.Sprintf("unsupported version %d", version))
	}
	n := int(binary.LittleEndian.Uint32(b[12:]))
	if n != len(b)-20 {
		return nil, bad(12, fmt.Sprintf("body length %d does not match file size %d", n, len(b)))
	}
	if got, want := crc32.Checksum(b[8:16+n], castagnoli), binary.LittleEndian.Uint32(b[16+n:]); got != want {
		return nil, bad(16+n, fmt.Sprintf("checksum mismatch: computed %08x, stored %08x", got, want))
	}
	d := codec.Decoder{B: b[:16+n], Off: 16}
	m := &Manifest{}
	m.NextSegmentID = d.Uvarint("")
	m.Checkpoint = int(d.Uvarint(""))
	m.LastSeq = d.Uvarint("")
	nseg := d.Count("", 4)
	for i := 0; i < nseg && d.Err == nil; i++ {
		m.Segments = append(m.Segments, Segment{ID: d.Uvarint(""), Size: int64(d.Uvarint("")), MinSeq: d.Uvarint(""), MaxSeq: d.Uvarint("")})
	}
	nts := d.Count("", 3)
	for i := 0; i < nts && d.Err == nil; i++ {
		t := Tombstone{Tenant: d.Str(""), Workspace: d.Str(""), Seq: d.Uvarint("")}
		if d.Err == nil && i > 0 && !wsLess(m.Tombstones[i-1].Tenant, m.Tombstones[i-1].Workspace, t.Tenant, t.Workspace) {
			d.Failf("", d.Off, "tombstone of workspace %q out of order or listed twice", t.Workspace)
		}
		m.Tombstones = append(m.Tombstones, t)
	}
	nv := d.Count("", 3)
	for i := 0; i < nv && d.Err == nil; i++ {
		v := DataVersion{Tenant: d.Str(""), Workspace: d.Str(""), Seq: d.Uvarint(""), Newest: d.Varint("")}
		if d.Err == nil && i > 0 && !wsLess(m.Versions[i-1].Tenant, m.Versions[i-1].Workspace, v.Tenant, v.Workspace) {
			d.Failf("", d.Off, "data version of workspace %q out of order or listed twice", v.Workspace)
		}
		m.Versions = append(m.Versions, v)
	}
	if version >= 2 {
		m.Embedder = d.Str("")
		if dim := d.Uvarint(""); d.Err == nil && dim > record.MaxVectorDim {
			d.Failf("", d.Off, "embedder dimension %d exceeds %d", dim, record.MaxVectorDim)
		} else {
			m.EmbedderDim = int(dim)
		}
	}
	if version >= 3 {
		nw := d.Count("", 4)
		last := -1 // the version entry of the previous workspace: they come in the versions' order
		for i := 0; i < nw && d.Err == nil; i++ {
			tenant, ws := d.Str(""), d.Str("")
			ne := d.Count("", 17)
			erased := make([]ErasedArtifact, 0, ne)
			for j := 0; j < ne && d.Err == nil; j++ {
				e := ErasedArtifact{Seq: d.Uvarint("")}
				e.ID = d.UUID("")
				if d.Err == nil && (e.Seq == 0 || len(erased) > 0 && e.Seq <= erased[len(erased)-1].Seq) {
					d.Failf("", d.Off, "erased artifacts of workspace %q are not in ascending seq order", ws)
				}
				erased = append(erased, e)
			}
			at := -1
			for vi := range m.Versions {
				if m.Versions[vi].Tenant == tenant && m.Versions[vi].Workspace == ws {
					at = vi
				}
			}
			switch {
			case d.Err != nil:
			case at < 0:
				d.Failf("", d.Off, "erased artifacts of workspace %q, which has no version", ws)
			case len(m.Versions[at].Erased) > 0 || ne == 0:
				d.Failf("", d.Off, "erased artifacts of workspace %q listed twice or empty", ws)
			case at < last:
				d.Failf("", d.Off, "erased artifacts of workspace %q out of order", ws)
			default:
				m.Versions[at].Erased = erased
				last = at
			}
		}
	}
	if version >= 4 {
		nr := d.Count("", 4)
		for i := 0; i < nr && d.Err == nil; i++ {
			r := Retention{Tenant: d.Str(""), Workspace: d.Str(""), Days: d.Uvarint(""), Cutoff: d.Varint("")}
			switch {
			case d.Err != nil:
			case r.Days == 0 || r.Days > record.MaxRetentionDays:
				d.Failf("", d.Off, "retention of workspace %q is %d days, not 1 to %d", r.Workspace, r.Days, record.MaxRetentionDays)
			case i > 0 && !wsLess(m.Retention[i-1].Tenant, m.Retention[i-1].Workspace, r.Tenant, r.Workspace):
				d.Failf("", d.Off, "retention of workspace %q out of order or listed twice", r.Workspace)
			default:
				m.Retention = append(m.Retention, r)
			}
		}
	}
	if d.Err == nil && d.Remaining() != 0 {
		d.Failf("", d.Off, "trailing bytes")
	}
	if d.Err != nil {
		return nil, bad(d.Off, d.Err.Error())
	}
	return m, nil
}

// Read returns (nil, nil) when the directory has no manifest yet.
func Read(dir string) (*Manifest, error) {
	path := filepath.Join(dir, FileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return Decode(path, b)
}

// Write replaces the manifest atomically.
func Write(fsys vfs.FS, dir string, m *Manifest) error {
	return codec.WriteFile(fsys, dir, FileName, m.Encode())
}
