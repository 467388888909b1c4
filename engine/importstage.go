package engine

// Atomic imports. `loci import` does not write into the data directory it
// imports into: it builds the result in a staging directory inside it (a
// copy whose segments are hard links of the directory's, which are never
// modified in place), imports, flushes and sets the data version there,
// and commits by moving the staging manifest's new segments into the
// directory and then replacing its manifest, one atomic rename. A refused
// record or a kill before that rename leaves the directory as it was (the
// moved segments are orphans, removed at open, and so is the staging
// directory); after it, the directory holds the whole import. The lock of
// the directory is held from staging to commit, so no server opens it in
// between.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/vfs"
	"github.com/loci-memory/loci/wal"
)

// importStagingName is the staging directory of an import, inside the data
// directory. Open removes one left by an import that did not finish.
const importStagingName = "import.staging"

// ImportStage is a staging copy of a closed data directory that an import
// writes into (open it with Open at Dir), then Commit makes the directory.
type ImportStage struct {
	dir, staging string
	lock         *os.File
}

// StageImport locks the closed data directory dir (which must hold a
// manifest: open and close it first) and makes a staging copy of it: the
// manifest, the control state, the WAL files from the checkpoint, and hard
// links of the segments. Close the returned stage (after Commit or not).
func StageImport(dir string) (*ImportStage, error) {
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	s := &ImportStage{dir: dir, staging: filepath.Join(dir, importStagingName), lock: lock}
	if err := s.stage(); err != nil {
		s.Close()
		return nil, fmt.Errorf("engine: stage the import: %w", err)
	}
	return s, nil
}

// Dir is the staging directory to open and import into.
func (s *ImportStage) Dir() string { return s.staging }

func (s *ImportStage) stage() error {
	m, err := manifest.Read(s.dir)
	if err != nil {
		return err
	}
	if m == nil {
		return fmt.Errorf("%s has no %s", s.dir, manifest.FileName)
	}
	if err := os.RemoveAll(s.staging); err != nil {
		return err
	}
	for _, d := range []string{segmentDir, walDir} {
		if err := os.MkdirAll(filepath.Join(s.staging, d), 0o755); err != nil {
			return err
		}
	}
	for _, e := range m.Segments {
		name := segment.FileName(e.ID)
		if err := linkOrCopy(filepath.Join(s.dir, segmentDir, name), filepath.Join(s.staging, segmentDir, name)); err != nil {
			return err
		}
	}
	for _, name := range []string{manifest.FileName, controlName, controlPayloadsName} {
		if err := copyIfExists(filepath.Join(s.dir, name), filepath.Join(s.staging, name)); err != nil {
			return err
		}
	}
	files, err := wal.Files(filepath.Join(s.dir, walDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, f := range files {
		if f >= m.Checkpoint {
			name := wal.FileName(f)
			if err := copyIfExists(filepath.Join(s.dir, walDir, name), filepath.Join(s.staging, walDir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Commit makes the staged directory (closed, flushed) the data directory:
// the segments its manifest lists that the directory lacks are moved in
// (and synced), then its control state, then its manifest replaces the
// directory's, the commit point. It then removes the staging directory.
func (s *ImportStage) Commit() error {
	sm, err := manifest.Read(s.staging)
	if err != nil {
		return fmt.Errorf("engine: commit the import: %w", err)
	}
	m, err := manifest.Read(s.dir)
	if err != nil {
		return fmt.Errorf("engine: commit the import: %w", err)
	}
	if sm == nil || m == nil || sm.LastSeq < m.LastSeq || sm.NextSegmentID < m.NextSegmentID {
		return fmt.Errorf("engine: commit the import: the staging directory %s does not continue %s", s.staging, s.dir)
	}
	have := map[uint64]bool{}
	for _, e := range m.Segments {
		have[e.ID] = true
	}
	segs := filepath.Join(s.dir, segmentDir)
	for _, e := range sm.Segments {
		if have[e.ID] {
			continue
		}
		name := segment.FileName(e.ID)
		dst := filepath.Join(segs, name)
		os.Remove(dst) // an orphan of a crashed flush: the manifest does not list it
		if err := os.Rename(filepath.Join(s.staging, segmentDir, name), dst); err != nil {
			return fmt.Errorf("engine: commit the import: %w", err)
		}
	}
	if err := vfs.Default.SyncDir(segs); err != nil {
		return fmt.Errorf("engine: commit the import: %w", err)
	}
	// The control state first, as a flush writes it: a snapshot newer than
	// the checkpoint only makes replay skip what it covers.
	for _, name := range []string{controlPayloadsName, controlName} {
		b, err := os.ReadFile(filepath.Join(s.staging, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("engine: commit the import: %w", err)
		}
		if err := codec.WriteFile(vfs.Default, s.dir, name, b); err != nil {
			return fmt.Errorf("engine: commit the import: %w", err)
		}
	}
	if err := manifest.Write(vfs.Default, s.dir, sm); err != nil {
		return fmt.Errorf("engine: commit the import: %w", err)
	}
	return os.RemoveAll(s.staging)
}

// Close removes the staging directory if Commit did not, and unlocks the
// data directory.
func (s *ImportStage) Close() error {
	err := os.RemoveAll(s.staging)
	return errors.Join(err, s.lock.Close())
}

// removeImportStaging removes the staging directory of an import that did
// not commit (or committed, and was killed before removing it). Callers
// hold the directory's lock, so no import is running.
func removeImportStaging(dir string) error {
	return os.RemoveAll(filepath.Join(dir, importStagingName))
}

func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyIfExists(src, dst)
}

// copyIfExists copies src to dst, synced; a missing src copies nothing.
func copyIfExists(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
