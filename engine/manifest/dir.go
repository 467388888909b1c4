package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/wal"
)

// The data directory around the manifest (docs/format/manifest.md): its
// lock, the rule for a directory without a manifest, and the framing of the
// control files. The engine opens directories with them; verify checks one
// with the same rules.

// Lock takes an exclusive advisory lock on dir/LOCK, recording our pid.
func Lock(dir string) (*os.File, error) {
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("engine: open lock file: %w", err)
	}
	if err := flock(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another process"
		} else {
			who = "pid " + who
		}
		return nil, fmt.Errorf("engine: data directory %s is in use by %s (lock %s): %w", dir, who, path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
	}
	return f, nil
}

// CheckMissing decides whether a directory without a manifest may be
// opened as one whose manifest was never written. It may when it has no
// segment files, or when the first WAL file is still there: the checkpoint
// never moved past file 1 without a manifest, so the WAL holds everything,
// and the segment files are leftovers of a first flush interrupted before
// its manifest (directories made before the empty manifest was written at
// creation could be left so) and are removed as orphans. Segment files
// without a manifest or the first WAL file mean a lost manifest: refuse,
// rather than start empty over them.
func CheckMissing(dir string) error {
	segs, _ := filepath.Glob(filepath.Join(dir, SegmentDir, "*.seg"))
	if len(segs) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, WALDir, wal.FileName(1))); err == nil {
		return nil
	}
	return fmt.Errorf("engine: %s has %d segment files but no %s and no %s: the manifest is lost; refusing to start empty over them",
		dir, len(segs), FileName, filepath.Join(WALDir, wal.FileName(1)))
}

// The control files are framed (codec.EncodeFramed): magic, version byte,
// CRC-32C, payload (docs/format/manifest.md § CONTROL).
var (
	ControlMagic         = []byte("LOCICTL") // CONTROL
	ControlPayloadsMagic = []byte("LOCICPL") // CONTROL_PAYLOADS
)

// ControlVersion is the version byte of both control files.
const ControlVersion = 1

// ReadFramed returns the payload of the control file name in dir, framed
// with magic, or nil when there is none.
func ReadFramed(dir, name string, magic []byte) ([]byte, error) {
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return codec.DecodeFramed(path, magic, ControlVersion, b)
}
