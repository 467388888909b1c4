// Package vfs is the file system interface of Loci's storage: the WAL, the
// segment writer and the engine's manifest and CONTROL files create, write,
// fsync, rename and remove their files through an [FS], so that tests can
// put a file system that loses everything not fsynced ([Strict]) or that
// fails chosen operations ([Inject]) under a real engine.
//
// [Default] is the operating system. Reads that need no fault model (a
// segment is mapped with mmap only once it is durable) may stay on the real
// path.
package vfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// File is an open file of an FS.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Seeker
	io.Closer
	// Name returns the path the file was opened with.
	Name() string
	Stat() (fs.FileInfo, error)
	// Sync makes the file's contents durable (fsync).
	Sync() error
	Truncate(size int64) error
}

// FS is what storage needs of a file system. Paths are OS paths.
type FS interface {
	// OpenFile opens a file as os.OpenFile does.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Remove(name string) error
	Rename(oldname, newname string) error
	ReadDir(name string) ([]fs.DirEntry, error)
	MkdirAll(name string, perm fs.FileMode) error
	Stat(name string) (fs.FileInfo, error)
	// SyncDir makes the creations, renames and removals of entries in the
	// directory name durable (fsync of the directory).
	SyncDir(name string) error
}

// Default is the operating system's file system.
var Default FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // a nil *os.File must not become a non-nil File
	}
	return f, nil
}

func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (osFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

// SyncDir fsyncs directory name, so that creations, renames and removals of
// its entries are durable. This is the one place the storage does it; the
// error names the directory.
func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "sync directory", Path: name, Err: err}
	}
	return nil
}

// Create creates or truncates name for reading and writing.
func Create(fsys FS, name string) (File, error) {
	return fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// RemoveDir removes the files in dir (one level: dir holds no
// directories) and then dir, taking what is already gone as removed.
func RemoveDir(fsys FS, dir string) error {
	entries, err := fsys.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if err := fsys.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := fsys.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// CreateTemp creates a new file in dir whose name is pattern with its last
// "*" replaced by a random string (appended if there is none), as
// os.CreateTemp does.
func CreateTemp(fsys FS, dir, pattern string) (File, error) {
	prefix, suffix := pattern, ""
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	for range 100 {
		var r [6]byte
		rand.Read(r[:])
		name := filepath.Join(dir, prefix+hex.EncodeToString(r[:])+suffix)
		f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("vfs: create temporary file in %s: too many names taken", dir)
}
