package vfs

import (
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// Op is a kind of file system operation an Inject can fail.
type Op uint8

const (
	OpWrite    Op = iota // File.Write and File.WriteAt
	OpSync               // File.Sync
	OpCreate             // OpenFile with os.O_CREATE
	OpRename             // FS.Rename
	OpRemove             // FS.Remove
	OpTruncate           // File.Truncate
	OpSyncDir            // FS.SyncDir
	numOps
)

var opNames = [numOps]string{"write", "sync", "create", "rename", "remove", "truncate", "syncdir"}

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return "op?"
}

// Inject wraps a file system and fails chosen operations: the nth next
// operation of a kind, every operation of a kind, or writes beyond a budget
// of bytes with ENOSPC, the way a full disk does (the part that fits is
// written). Errors are *fs.PathError around the given cause, so
// errors.Is(err, syscall.ENOSPC) holds for a full disk. It is safe for
// concurrent use; the rules can change while the wrapped FS is in use.
type Inject struct {
	fs FS

	mu     sync.Mutex
	nth    [numOps][]failAt // one-shot failures, by countdown
	always [numOps]error    // fail every operation of the kind
	space  int64            // bytes that can still be written; < 0: unlimited
	counts [numOps]int      // operations seen, by kind
}

type failAt struct {
	left int // operations of the kind still to pass
	err  error
}

// NewInject returns an Inject over fsys that fails nothing yet.
func NewInject(fsys FS) *Inject { return &Inject{fs: fsys, space: -1} }

// FailNth makes the nth next operation of kind op (1: the next one) fail
// with err, once.
func (f *Inject) FailNth(op Op, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nth[op] = append(f.nth[op], failAt{left: n, err: err})
}

// FailAlways makes every operation of kind op fail with err; nil stops it.
func (f *Inject) FailAlways(op Op, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.always[op] = err
}

// SetSpace lets n more bytes be written; past that, writes fail with ENOSPC.
// A negative n means unlimited space: the disk was freed.
func (f *Inject) SetSpace(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.space = n
}

// Reset removes every rule and restores unlimited space.
func (f *Inject) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nth = [numOps][]failAt{}
	f.always = [numOps]error{}
	f.space = -1
}

// Count returns how many operations of kind op have been attempted.
func (f *Inject) Count(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

// check counts one operation of kind op and returns the error it must fail
// with, or nil.
func (f *Inject) check(op Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[op]++
	var fail error
	rules := f.nth[op][:0]
	for _, r := range f.nth[op] {
		r.left--
		if r.left == 0 && fail == nil {
			fail = r.err
			continue
		}
		if r.left > 0 {
			rules = append(rules, r)
		}
	}
	f.nth[op] = rules
	if fail == nil {
		fail = f.always[op]
	}
	return fail
}

// allow returns how many of n bytes fit in the space left, taking them.
func (f *Inject) allow(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.space < 0 {
		return n
	}
	n = int(min(int64(n), f.space))
	f.space -= int64(n)
	return n
}

func (f *Inject) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 {
		if err := f.check(OpCreate); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	file, err := f.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &injectFile{File: file, fs: f}, nil
}

func (f *Inject) Remove(name string) error {
	if err := f.check(OpRemove); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return f.fs.Remove(name)
}

func (f *Inject) Rename(oldname, newname string) error {
	if err := f.check(OpRename); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return f.fs.Rename(oldname, newname)
}

func (f *Inject) ReadDir(name string) ([]fs.DirEntry, error)   { return f.fs.ReadDir(name) }
func (f *Inject) MkdirAll(name string, perm fs.FileMode) error { return f.fs.MkdirAll(name, perm) }
func (f *Inject) Stat(name string) (fs.FileInfo, error)        { return f.fs.Stat(name) }

func (f *Inject) SyncDir(name string) error {
	if err := f.check(OpSyncDir); err != nil {
		return &fs.PathError{Op: "sync", Path: name, Err: err}
	}
	return f.fs.SyncDir(name)
}

// injectFile is a file of an Inject.
type injectFile struct {
	File
	fs *Inject
}

// write writes what the rules and the space allow through w.
func (f *injectFile) write(p []byte, w func([]byte) (int, error)) (int, error) {
	if err := f.fs.check(OpWrite); err != nil {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	fit := f.fs.allow(len(p))
	n, err := w(p[:fit])
	if err == nil && fit < len(p) {
		err = &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return n, err
}

func (f *injectFile) Write(p []byte) (int, error) { return f.write(p, f.File.Write) }

func (f *injectFile) WriteAt(p []byte, off int64) (int, error) {
	return f.write(p, func(b []byte) (int, error) { return f.File.WriteAt(b, off) })
}

func (f *injectFile) Sync() error {
	if err := f.fs.check(OpSync); err != nil {
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return f.File.Sync()
}

func (f *injectFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.Name(), Err: err}
	}
	return f.File.Truncate(size)
}
