package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// ErrCrashed is returned by every changing operation of a Strict file system
// between Crash and Restart: the process it simulates is dead.
var ErrCrashed = errors.New("vfs: simulated crash: file system is down")

// Strict is a file system over a real directory that remembers what has
// been made durable, and whose Crash rewrites the directory to exactly that:
// a file's contents as of its last Sync, and a directory's entries as of its
// last SyncDir. Appended bytes not fsynced are dropped, and creations,
// renames and removals not followed by a directory fsync are undone. This is
// the worst a power failure may do, and what a SIGKILL, which keeps the
// page cache, never shows; like Pebble's strict in-memory file system, it
// makes a missing fsync fail a test.
//
// Files under the root when NewStrict is called count as durable.
// Directories count as durable once created (MkdirAll). Changes made by
// other means than the Strict (os calls) are not tracked. Only operations
// under the root are allowed.
type Strict struct {
	root string

	mu      sync.Mutex
	crashed bool
	current map[string]*node            // path -> file, as the running process sees it
	durable map[string]map[string]*node // directory -> name -> file, as of its last SyncDir
}

// node is one file (an inode); names come and go, its synced contents stay.
type node struct {
	synced []byte // contents as of the last Sync
}

// NewStrict returns a Strict file system over root, taking the regular
// files under it as durable.
func NewStrict(root string) (*Strict, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	s := &Strict{root: root, current: map[string]*node{}, durable: map[string]map[string]*node{}}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			s.durable[path] = map[string]*node{}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n := &node{synced: b}
		s.current[path] = n
		s.durable[filepath.Dir(path)][d.Name()] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("vfs: strict file system over %s: %w", root, err)
	}
	return s, nil
}

// path cleans name and checks it is under the root.
func (s *Strict) path(name string) (string, error) {
	p, err := filepath.Abs(name)
	if err != nil {
		return "", err
	}
	if p != s.root && !strings.HasPrefix(p, s.root+string(filepath.Separator)) {
		return "", fmt.Errorf("vfs: %s is outside the strict file system's root %s", name, s.root)
	}
	return p, nil
}

// nodeOf returns the node of path, adopting a file made by other means as
// durable as it is now. s.mu is held.
func (s *Strict) nodeOf(path string) *node {
	if n := s.current[path]; n != nil {
		return n
	}
	b, _ := os.ReadFile(path)
	n := &node{synced: b}
	s.current[path] = n
	return n
}

// OpenFile opens name. A write-only open is made read-write so that Sync can
// read back what it makes durable.
func (s *Strict) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	p, err := s.path(name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if s.crashed && (writable || flag&os.O_CREATE != 0) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrCrashed}
	}
	if flag&os.O_WRONLY != 0 {
		flag = flag&^os.O_WRONLY | os.O_RDWR
	}
	_, statErr := os.Stat(p)
	f, err := os.OpenFile(p, flag, perm)
	if err != nil {
		return nil, err
	}
	var n *node
	if errors.Is(statErr, fs.ErrNotExist) {
		n = &node{} // created now: nothing of it is durable
		s.current[p] = n
	} else {
		n = s.nodeOf(p)
	}
	return &strictFile{File: f, fs: s, node: n, name: name}, nil
}

func (s *Strict) Remove(name string) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.crashed {
		return &fs.PathError{Op: "remove", Path: name, Err: ErrCrashed}
	}
	if err := os.Remove(p); err != nil {
		return err
	}
	delete(s.current, p)
	return nil
}

func (s *Strict) Rename(oldname, newname string) error {
	op, err := s.path(oldname)
	if err != nil {
		return err
	}
	np, err := s.path(newname)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.crashed {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: ErrCrashed}
	}
	n := s.nodeOf(op)
	if err := os.Rename(op, np); err != nil {
		return err
	}
	delete(s.current, op)
	s.current[np] = n
	return nil
}

func (s *Strict) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

func (s *Strict) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// MkdirAll creates directories, which count as durable at once.
func (s *Strict) MkdirAll(name string, perm fs.FileMode) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.crashed {
		return &fs.PathError{Op: "mkdir", Path: name, Err: ErrCrashed}
	}
	if err := os.MkdirAll(p, perm); err != nil {
		return err
	}
	for d := p; d != s.root && strings.HasPrefix(d, s.root); d = filepath.Dir(d) {
		if s.durable[d] == nil {
			s.durable[d] = map[string]*node{}
		}
	}
	return nil
}

// SyncDir fsyncs directory name and records its current entries as durable.
func (s *Strict) SyncDir(name string) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.crashed {
		return &fs.PathError{Op: "sync", Path: name, Err: ErrCrashed}
	}
	if err := Default.SyncDir(p); err != nil {
		return err
	}
	entries := map[string]*node{}
	for path, n := range s.current {
		if filepath.Dir(path) == p {
			entries[filepath.Base(path)] = n
		}
	}
	s.durable[p] = entries
	return nil
}

// Crash simulates a power failure: from now until Restart every changing
// operation fails with ErrCrashed, and the directory is rewritten to its
// durable state. Files still open by the "dead" process keep pointing at
// the replaced files, which are unlinked.
func (s *Strict) Crash() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.crashed = true
	var errs []error
	for path := range s.current {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.current = map[string]*node{}
	dirs := make([]string, 0, len(s.durable))
	for d := range s.durable {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		for name, n := range s.durable[d] {
			path := filepath.Join(d, name)
			if err := os.WriteFile(path, n.synced, 0o644); err != nil {
				errs = append(errs, err)
				continue
			}
			s.current[path] = n
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("vfs: crash: rewrite %s to its durable state: %w", s.root, err)
	}
	return nil
}

// Restart ends a simulated crash: the file system works again, for the
// process that opens the data directory next.
func (s *Strict) Restart() {
	s.mu.Lock()
	s.crashed = false
	s.mu.Unlock()
}

// strictFile is a file of a Strict.
type strictFile struct {
	*os.File
	fs   *Strict
	node *node
	name string
}

func (f *strictFile) Name() string { return f.name }

// changing runs op unless the file system has crashed.
func (f *strictFile) changing(what string, op func() error) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.crashed {
		return &fs.PathError{Op: what, Path: f.name, Err: ErrCrashed}
	}
	return op()
}

func (f *strictFile) Write(p []byte) (n int, err error) {
	err = f.changing("write", func() error {
		n, err = f.File.Write(p)
		return err
	})
	return n, err
}

func (f *strictFile) WriteAt(p []byte, off int64) (n int, err error) {
	err = f.changing("write", func() error {
		n, err = f.File.WriteAt(p, off)
		return err
	})
	return n, err
}

func (f *strictFile) Truncate(size int64) error {
	return f.changing("truncate", func() error { return f.File.Truncate(size) })
}

// Sync fsyncs the file and records its contents as durable.
func (f *strictFile) Sync() error {
	return f.changing("sync", func() error {
		if err := f.File.Sync(); err != nil {
			return err
		}
		st, err := f.File.Stat()
		if err != nil {
			return err
		}
		b := make([]byte, st.Size())
		if _, err := f.File.ReadAt(b, 0); err != nil && len(b) > 0 {
			return fmt.Errorf("vfs: read back %s: %w", f.name, err)
		}
		f.node.synced = b
		return nil
	})
}
