package codec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/loci-memory/loci/vfs"
)

// ErrRenamedNotSynced marks a failure of ReplaceFile after the rename: the
// new content is in place but may not be durable, and the old content is
// gone, so nothing the new content refers to may be removed.
var ErrRenamedNotSynced = errors.New("replaced, but the directory fsync failed")

// ReplaceFile makes path hold what write writes so that a crash leaves
// either the old content or the new, never a mix: it writes a temporary
// file in path's directory, fsyncs it, renames it over path and fsyncs the
// directory. The temporary file's name is tmp, created or truncated, or,
// when tmp holds a '*', tmp with the '*' replaced by a random string
// (vfs.CreateTemp), so that writers of different files never share one.
//
// A failure before the rename (a full disk, say) removes the temporary file
// and leaves the old content; one after it wraps ErrRenamedNotSynced.
func ReplaceFile(fsys vfs.FS, path, tmp string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	var f vfs.File
	var err error
	if strings.Contains(tmp, "*") {
		f, err = vfs.CreateTemp(fsys, dir, tmp)
	} else {
		f, err = fsys.OpenFile(filepath.Join(dir, tmp), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	}
	if err != nil {
		return err
	}
	name := f.Name()
	fail := func(err error) error {
		fsys.Remove(name)
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fail(fmt.Errorf("write %s: %w", name, err))
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fail(fmt.Errorf("sync %s: %w", name, err))
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := fsys.Rename(name, path); err != nil {
		return fail(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("%s: %w: %w", path, ErrRenamedNotSynced, err)
	}
	return nil
}

// WriteFile is ReplaceFile of the bytes data, through the temporary file
// name + ".tmp" beside dir/name.
func WriteFile(fsys vfs.FS, dir, name string, data []byte) error {
	return ReplaceFile(fsys, filepath.Join(dir, name), name+".tmp", func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
