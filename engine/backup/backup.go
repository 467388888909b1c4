// Package backup copies a live data directory to a backup and a backup back
// to a data directory (docs/format/export.md § Backup, § Restore). It reads
// the directory's files, never opens the engine: the engine's write order
// (segments immutable, MANIFEST and the control files replaced atomically,
// the WAL append-only) makes a copy in the right order crash-consistent. It
// writes through vfs, so the strict crash tests reach it.
package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/vfs"
	"github.com/loci-memory/loci/wal"
)

// castagnoli is the CRC-32C table of the checksums in BACKUP.json.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// InfoName is the file a finished backup ends with: it lists every
// file of the backup with its size and checksum. A backup directory without
// it is incomplete (the backup was interrupted) and Restore refuses it.
const InfoName = "BACKUP.json"

// maxAttempts bounds how often Take starts over when the server's
// maintenance removed a file between reading the manifest and opening it.
const maxAttempts = 20

// walHeader is the 8-byte header every WAL file starts with
// (docs/format/wal.md § File header).
var walHeader = []byte("LOCIWAL\x01")

// Options configures Take.
type Options struct {
	// Link hard-links segment files into the backup instead of copying
	// them, when the backup is on the same file system (segments are
	// immutable, so sharing their inodes is safe; it is not a copy against
	// disk failure). Falls back to a copy where linking fails.
	Link bool
	// FS is the file system the backup is written through (nil: the
	// operating system's), so that the strict crash tests reach it. The
	// source is only read. Segments are hard-linked only on vfs.Default.
	FS vfs.FS
}

// Info describes a finished backup; it is stored as BACKUP.json.
type Info struct {
	Format     int       `json:"format"`
	Source     string    `json:"source"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Attempts   int       `json:"attempts"`   // snapshots taken; more than 1 when maintenance raced the backup
	Checkpoint int       `json:"checkpoint"` // first WAL file of the backup
	LastSeq    uint64    `json:"last_seq"`   // highest WAL sequence number in the backup (manifest's when the WAL is empty)
	Segments   int       `json:"segments"`
	// TokenRowFiles counts the segments' token-row files copied
	// (tokenrows/, late interaction): derived data, copied so that a
	// restored server does not compute them again.
	TokenRowFiles int    `json:"token_row_files"`
	WALFiles      int    `json:"wal_files"`
	WALCut        int64  `json:"wal_cut_bytes"` // bytes of an unfinished record dropped from the last WAL file
	Bytes         int64  `json:"bytes"`
	Files         []File `json:"files"`
}

// File is one file of a backup, its path relative to the backup
// directory. CRC is the CRC-32C of its bytes (0 for a hard-linked segment:
// its sections carry their own checksums).
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	CRC    uint32 `json:"crc32c"`
	Linked bool   `json:"linked,omitempty"`
}

// manifestRead, when set (tests only), runs right after a snapshot
// attempt has read the manifest, to make maintenance race it.
var manifestRead func()

// errRaced marks a snapshot attempt that lost a race with the server's
// maintenance (a file named by the manifest was removed): start over.
var errRaced = errors.New("raced with maintenance")

// sourceSnapshot is a consistent set of open files of a live data directory:
// the manifest's bytes, the segments it names, the control files and the WAL
// files from its checkpoint on. Open descriptors keep a file's content
// readable after the server removes it (compaction, WAL checkpointing).
type sourceSnapshot struct {
	manifestBytes []byte
	m             *manifest.Manifest
	segs          []*os.File // in manifest order
	rows          []rowFile  // by model directory, then manifest order
	control       *os.File   // nil: none
	payloads      *os.File   // nil: none
	walIndexes    []int
	wals          []*os.File
}

// rowFile is an open token-row file of a snapshot segment, rel its path
// relative to the data directory.
type rowFile struct {
	rel string
	f   *os.File
}

func (s *sourceSnapshot) close() {
	for _, f := range append(append(s.segs, s.wals...), s.control, s.payloads) {
		if f != nil {
			f.Close()
		}
	}
	for _, r := range s.rows {
		r.f.Close()
	}
}

// openOptional opens path, returning (nil, nil) when it does not exist.
func openOptional(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return f, err
}

// takeSourceSnapshot opens the files of one consistent state of src. The order
// matters: the manifest first, then its segments, then CONTROL (written
// before every manifest, so never older than it), CONTROL_PAYLOADS
// (written before CONTROL, so never older than it), then the WAL files from
// the checkpoint to the current one (so they hold every record the control
// snapshot covers). A file the manifest needs that is gone means a newer
// manifest replaced it: errRaced.
func takeSourceSnapshot(src string) (_ *sourceSnapshot, err error) {
	path := filepath.Join(src, manifest.FileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: not a Loci data directory", src, manifest.FileName)
	}
	if err != nil {
		return nil, err
	}
	m, err := manifest.Decode(path, b)
	if err != nil {
		return nil, err
	}
	if manifestRead != nil {
		manifestRead()
	}
	s := &sourceSnapshot{manifestBytes: b, m: m}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	for _, e := range m.Segments {
		p := filepath.Join(src, manifest.SegmentDir, segment.FileName(e.ID))
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("segment %s: %w", p, errRaced)
		}
		if err != nil {
			return nil, err
		}
		s.segs = append(s.segs, f)
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		if st.Size() != e.Size {
			return nil, fmt.Errorf("segment %s is %d bytes, the manifest says %d: the data directory is damaged (run loci verify)", p, st.Size(), e.Size)
		}
	}
	if s.rows, err = openTokenRows(src, m); err != nil {
		return nil, err
	}
	if s.control, err = openOptional(filepath.Join(src, manifest.ControlName)); err != nil {
		return nil, err
	}
	if s.payloads, err = openOptional(filepath.Join(src, manifest.ControlPayloadsName)); err != nil {
		return nil, err
	}
	walPath := filepath.Join(src, manifest.WALDir)
	all, err := wal.Files(walPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, i := range all {
		if i >= m.Checkpoint {
			s.walIndexes = append(s.walIndexes, i)
		}
	}
	for k, i := range s.walIndexes {
		if i != m.Checkpoint+k {
			return nil, fmt.Errorf("wal file %s missing: %w", wal.FileName(m.Checkpoint+k), errRaced)
		}
		f, err := os.Open(filepath.Join(walPath, wal.FileName(i)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("wal file %s: %w", wal.FileName(i), errRaced)
		}
		if err != nil {
			return nil, err
		}
		s.wals = append(s.wals, f)
	}
	return s, nil
}

// openTokenRows opens the token-row files of m's segments under every
// model directory of src's tokenrows/ (docs/format/tokenrows.md). They are
// opened after the segments, so each is the rows of a segment of the
// snapshot; the server only ever replaces such a file whole, or removes it,
// so an open one is complete. A segment without one is left to the
// restored server's worker, as after a crash.
func openTokenRows(src string, m *manifest.Manifest) (rows []rowFile, err error) {
	models, err := os.ReadDir(filepath.Join(src, manifest.TokenRowDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			for _, r := range rows {
				r.f.Close()
			}
		}
	}()
	for _, d := range models {
		if !d.IsDir() {
			continue
		}
		for _, e := range m.Segments {
			rel := filepath.Join(manifest.TokenRowDir, d.Name(), manifest.TokenRowFile(segment.FileName(e.ID)))
			f, err := openOptional(filepath.Join(src, rel))
			if err != nil {
				return rows, err
			}
			if f != nil {
				rows = append(rows, rowFile{rel, f})
			}
		}
	}
	return rows, nil
}

// Take copies the data directory src, which a running server may hold
// open, to the new directory dst as a crash-consistent snapshot: dst is a
// state src could have been left in by a crash at some moment during the
// backup, so a server opened on it recovers as after that crash. Everything
// acknowledged before Take was called is in it. It needs no cooperation
// from the server and does not take its lock (docs/format/export.md §
// Backup explains why this is safe). dst must not exist or be empty.
func Take(src, dst string, opts Options) (*Info, error) {
	start := time.Now()
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	fsys := opts.FS
	if st, err := os.Stat(src); err != nil {
		return nil, fmt.Errorf("backup: data directory: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("backup: data directory %s is not a directory", src)
	}
	if err := checkEmptyTarget(dst); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	for _, d := range []string{dst, filepath.Join(dst, manifest.SegmentDir), filepath.Join(dst, manifest.WALDir)} {
		if err := fsys.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
	}
	var lastErr error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		s, err := takeSourceSnapshot(src)
		if err == nil {
			var info *Info
			info, err = writeSnapshot(s, src, dst, opts)
			s.close()
			if err == nil {
				info.StartedAt, info.Attempts = start.UTC(), attempt
				info.FinishedAt = time.Now().UTC()
				if err := writeInfo(fsys, dst, info); err != nil {
					return nil, fmt.Errorf("backup: %w", err)
				}
				return info, nil
			}
		}
		if !errors.Is(err, errRaced) {
			return nil, fmt.Errorf("backup: %w", err)
		}
		lastErr = err
		// Leave nothing of the lost attempt behind: the next one starts
		// from an empty directory.
		if err := clearDir(fsys, dst); err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
	}
	return nil, fmt.Errorf("backup: the data directory changed under %d attempts in a row (last: %v); retry when maintenance is quieter", maxAttempts, lastErr)
}

// checkEmptyTarget refuses a path that exists and is not an empty directory.
func checkEmptyTarget(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("target %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("target %s is not empty (it holds %d entries, such as %q); give a new or empty directory", dir, len(entries), entries[0].Name())
	}
	return nil
}

// clearDir empties the backup directory after a lost attempt,
// keeping its segments/ and wal/ subdirectories.
func clearDir(fsys vfs.FS, dst string) error {
	for _, d := range []string{manifest.SegmentDir, manifest.WALDir} {
		entries, err := fsys.ReadDir(filepath.Join(dst, d))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := fsys.Remove(filepath.Join(dst, d, e.Name())); err != nil {
				return err
			}
		}
	}
	for _, name := range []string{manifest.FileName, manifest.ControlName, manifest.ControlPayloadsName} {
		if err := fsys.Remove(filepath.Join(dst, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	root := filepath.Join(dst, manifest.TokenRowDir)
	models, err := fsys.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, d := range models {
		if err := vfs.RemoveDir(fsys, filepath.Join(root, d.Name())); err != nil {
			return err
		}
	}
	return fsys.Remove(root)
}

// writeSnapshot writes the snapshot's files into dst, the manifest last.
func writeSnapshot(s *sourceSnapshot, src, dst string, opts Options) (*Info, error) {
	fsys := opts.FS
	info := &Info{Format: 1, Source: src, Checkpoint: s.m.Checkpoint, LastSeq: s.m.LastSeq, Segments: len(s.segs)}
	add := func(rel string, size int64, crc uint32, linked bool) {
		info.Files = append(info.Files, File{Path: rel, Size: size, CRC: crc, Linked: linked})
		info.Bytes += size
	}
	for i, f := range s.segs {
		name := segment.FileName(s.m.Segments[i].ID)
		rel := filepath.Join(manifest.SegmentDir, name)
		n, crc, linked, err := copyOrLink(fsys, f, filepath.Join(src, rel), filepath.Join(dst, rel), opts.Link)
		if err != nil {
			return nil, err
		}
		if n != s.m.Segments[i].Size {
			return nil, fmt.Errorf("segment %s: copied %d bytes, the manifest says %d", name, n, s.m.Segments[i].Size)
		}
		add(rel, n, crc, linked)
	}
	// The token rows, copied or linked as segments are (a file is only
	// ever replaced whole, never changed).
	var rowDirs []string
	for _, r := range s.rows {
		dir := filepath.Join(dst, filepath.Dir(r.rel))
		if !slices.Contains(rowDirs, dir) {
			if err := fsys.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			rowDirs = append(rowDirs, dir)
		}
		n, crc, linked, err := copyOrLink(fsys, r.f, filepath.Join(src, r.rel), filepath.Join(dst, r.rel), opts.Link)
		if err != nil {
			return nil, err
		}
		add(r.rel, n, crc, linked)
		info.TokenRowFiles++
	}
	if len(rowDirs) > 0 {
		rowDirs = append(rowDirs, filepath.Join(dst, manifest.TokenRowDir))
	}
	for _, d := range rowDirs {
		if err := fsys.SyncDir(d); err != nil {
			return nil, err
		}
	}
	// The WAL: every file but the last is complete (the log fsyncs a file
	// before it starts the next one). The last is copied as far as it is
	// written now; a record still being written is cut, as replay would.
	prev := s.m.LastSeq
	for k, f := range s.wals {
		rel := filepath.Join(manifest.WALDir, wal.FileName(s.walIndexes[k]))
		path := filepath.Join(dst, rel)
		if _, _, err := copyFrom(fsys, f, path, -1); err != nil {
			return nil, err
		}
		last := k == len(s.wals)-1
		var first, seq uint64
		err := wal.ScanFile(path, func(_ int64, r wal.Record) error {
			if first == 0 {
				first = r.Seq
			}
			seq = r.Seq
			return nil
		})
		var ce *wal.CorruptionError
		switch {
		case err == nil:
		case last && errors.As(err, &ce) && ce.Next == 0:
			cut, err := cutTornTail(fsys, path, ce.Offset)
			if err != nil {
				return nil, err
			}
			info.WALCut = cut
		case last && errors.As(err, &ce):
			// A writer cutting back a failed batch while we read can leave
			// a mix of old and new bytes: take the snapshot again.
			return nil, fmt.Errorf("%v (copied from %s): %w", err, filepath.Join(src, rel), errRaced)
		case errors.As(err, &ce):
			return nil, fmt.Errorf("%v (copied from %s): the data directory is damaged (run loci verify)", err, filepath.Join(src, rel))
		default:
			return nil, err
		}
		if first != 0 && first <= prev {
			return nil, fmt.Errorf("wal file %s starts at seq %d, not after %d: %w", rel, first, prev, errRaced)
		}
		if seq != 0 {
			prev = seq
		}
		info.WALFiles++
	}
	info.LastSeq = prev
	for _, rel := range []string{manifest.WALDir, manifest.SegmentDir} {
		if err := fsys.SyncDir(filepath.Join(dst, rel)); err != nil {
			return nil, err
		}
	}
	// Files sizes and checksums are taken from the final bytes.
	for k := range s.wals {
		rel := filepath.Join(manifest.WALDir, wal.FileName(s.walIndexes[k]))
		size, crc, err := fileCRC(filepath.Join(dst, rel))
		if err != nil {
			return nil, err
		}
		add(rel, size, crc, false)
	}
	for _, c := range []struct {
		f    *os.File
		name string
	}{{s.payloads, manifest.ControlPayloadsName}, {s.control, manifest.ControlName}} {
		if c.f == nil {
			continue
		}
		n, crc, err := copyFrom(fsys, c.f, filepath.Join(dst, c.name), -1)
		if err != nil {
			return nil, err
		}
		add(c.name, n, crc, false)
	}
	if err := codec.WriteFile(fsys, dst, manifest.FileName, s.manifestBytes); err != nil {
		return nil, err
	}
	add(manifest.FileName, int64(len(s.manifestBytes)), crc32.Checksum(s.manifestBytes, castagnoli), false)
	return info, nil
}

// copyOrLink puts the open immutable file f, at path src, at dst: a hard
// link when link is set and possible (its CRC is not computed: 0), else a
// copy. It returns the file's size and CRC-32C.
func copyOrLink(fsys vfs.FS, f *os.File, src, dst string, link bool) (n int64, crc uint32, linked bool, err error) {
	if link && fsys == vfs.Default && linkSame(f, src, dst) {
		st, err := f.Stat()
		if err != nil {
			return 0, 0, false, err
		}
		return st.Size(), 0, true, nil
	}
	n, crc, err = copyFrom(fsys, f, dst, -1)
	return n, crc, false, err
}

// linkSame hard-links the file at path into dst if path still names the
// open file f (segment ids are never reused, so it does unless removed).
func linkSame(f *os.File, path, dst string) bool {
	if err := os.Link(path, dst); err != nil {
		return false
	}
	a, err1 := f.Stat()
	b, err2 := os.Stat(dst)
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		os.Remove(dst)
		return false
	}
	return true
}

// cutTornTail truncates a copied WAL file to its last complete record (a
// file whose header is torn keeps a fresh header) and returns the bytes cut.
func cutTornTail(fsys vfs.FS, path string, off int64) (int64, error) {
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if off < int64(len(walHeader)) {
		off = int64(len(walHeader))
		if _, err := f.WriteAt(walHeader, 0); err != nil {
			return 0, err
		}
	}
	if err := f.Truncate(off); err != nil {
		return 0, err
	}
	return st.Size() - off, f.Sync()
}

// copyFrom copies src from its start to a new file at dst (fsynced) and
// returns the bytes copied and their CRC-32C. limit < 0 copies to the end.
func copyFrom(fsys vfs.FS, src *os.File, dst string, limit int64) (int64, uint32, error) {
	var r io.Reader = io.NewSectionReader(src, 0, 1<<62)
	if limit >= 0 {
		r = io.LimitReader(r, limit)
	}
	out, err := fsys.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, 0, err
	}
	h := crc32.New(castagnoli)
	n, err := io.Copy(io.MultiWriter(out, h), r)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("copy %s to %s: %w", src.Name(), dst, err)
	}
	return n, h.Sum32(), nil
}

// fileCRC returns a file's size and CRC-32C.
func fileCRC(path string) (int64, uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	return n, h.Sum32(), err
}

// writeInfo writes BACKUP.json atomically: its presence marks the
// backup complete.
func writeInfo(fsys vfs.FS, dst string, info *Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return codec.WriteFile(fsys, dst, InfoName, append(b, '\n'))
}

// ReadInfo reads a backup's BACKUP.json; a directory without one is
// not a complete backup.
func ReadInfo(dir string) (*Info, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("backup %s: %w", dir, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, InfoName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: not a complete Loci backup (an interrupted one, or another directory)", dir, InfoName)
	}
	if err != nil {
		return nil, err
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, InfoName), err)
	}
	if info.Format != 1 {
		return nil, fmt.Errorf("%s: unsupported backup format %d", filepath.Join(dir, InfoName), info.Format)
	}
	return &info, nil
}

// Restore copies the backup in from into the data directory dir, which must
// not exist or be empty, checking every file's size and checksum against
// BACKUP.json; the manifest is written last, so an interrupted restore
// leaves a directory Open refuses rather than a partial one it would accept.
// The caller verifies the result (loci restore runs verify.Dir on it).
func Restore(from, dir string) error { return RestoreFS(vfs.Default, from, dir) }

// RestoreFS is Restore writing through the file system fsys.
func RestoreFS(fsys vfs.FS, from, dir string) error {
	info, err := ReadInfo(from)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := checkEmptyTarget(dir); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	for _, d := range []string{dir, filepath.Join(dir, manifest.SegmentDir), filepath.Join(dir, manifest.WALDir)} {
		if err := fsys.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	files := slices.Clone(info.Files)
	// made lists the directories files went into (token rows have theirs),
	// synced with the others at the end.
	made := []string{dir, filepath.Join(dir, manifest.SegmentDir), filepath.Join(dir, manifest.WALDir)}
	// The manifest goes last: a directory with segments and no manifest
	// is refused by Open, never taken for an empty one.
	slices.SortStableFunc(files, func(a, b File) int {
		return boolInt(a.Path == manifest.FileName) - boolInt(b.Path == manifest.FileName)
	})
	for _, bf := range files {
		if filepath.IsAbs(bf.Path) || !filepath.IsLocal(bf.Path) {
			return fmt.Errorf("restore: %s lists an unsafe path %q", InfoName, bf.Path)
		}
		var n int64
		var crc uint32
		if bf.Path == manifest.FileName {
			b, err := os.ReadFile(filepath.Join(from, bf.Path))
			if err != nil {
				return fmt.Errorf("restore: %w", err)
			}
			n, crc = int64(len(b)), crc32.Checksum(b, castagnoli)
			if n == bf.Size && crc == bf.CRC {
				// What the manifest names must be durable before it is:
				// a crash must not leave it naming files that are gone.
				for _, d := range []string{filepath.Join(dir, manifest.SegmentDir), filepath.Join(dir, manifest.WALDir), dir} {
					if err := fsys.SyncDir(d); err != nil {
						return fmt.Errorf("restore: %w", err)
					}
				}
				if err := codec.WriteFile(fsys, dir, manifest.FileName, b); err != nil {
					return fmt.Errorf("restore: %w", err)
				}
			}
		} else {
			if d := filepath.Dir(filepath.Join(dir, bf.Path)); !slices.Contains(made, d) {
				if err := fsys.MkdirAll(d, 0o755); err != nil {
					return fmt.Errorf("restore: %w", err)
				}
				for ; !slices.Contains(made, d); d = filepath.Dir(d) {
					made = append(made, d)
				}
			}
			in, err := os.Open(filepath.Join(from, bf.Path))
			if err != nil {
				return fmt.Errorf("restore: %w", err)
			}
			n, crc, err = copyFrom(fsys, in, filepath.Join(dir, bf.Path), -1)
			in.Close()
			if err != nil {
				return fmt.Errorf("restore: %w", err)
			}
		}
		if n != bf.Size || (!bf.Linked && crc != bf.CRC) {
			return codec.Errorf("restore: %s is %d bytes with CRC-32C %08x; the backup recorded %d bytes, %08x: the backup is damaged",
				filepath.Join(from, bf.Path), n, crc, bf.Size, bf.CRC)
		}
	}
	// The deepest first: a directory after the directories it holds.
	slices.SortStableFunc(made, func(a, b string) int {
		return strings.Count(b, string(filepath.Separator)) - strings.Count(a, string(filepath.Separator))
	})
	for _, d := range made {
		if err := fsys.SyncDir(d); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
