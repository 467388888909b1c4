package crashtest

import (
	"io/fs"
	"sync"

	"github.com/loci-memory/loci/vfs"
)

// FS is a file system that simulates a power failure (Strict.Crash) just
// before its Nth changing operation, which then fails like every later
// one. Counting operations makes every crash point reproducible: a run
// with N 0 never crashes and counts them (Ops).
type FS struct {
	*vfs.Strict
	N       int // crash before operation N (0: never)
	mu      sync.Mutex
	ops     int
	crashed bool
}

// Ops returns the changing operations so far.
func (c *FS) Ops() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops
}

// Crashed reports whether the file system has crashed.
func (c *FS) Crashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

// op counts one changing operation and crashes the file system if it is
// the chosen one.
func (c *FS) op() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops++
	if c.ops == c.N && !c.crashed {
		c.crashed = true
		if err := c.Strict.Crash(); err != nil {
			panic(err)
		}
	}
}

func (c *FS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if flag&(1|2) != 0 { // O_WRONLY or O_RDWR: the file may change
		c.op()
	}
	f, err := c.Strict.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, c: c}, nil
}

func (c *FS) Remove(name string) error { c.op(); return c.Strict.Remove(name) }
func (c *FS) Rename(oldname, newname string) error {
	c.op()
	return c.Strict.Rename(oldname, newname)
}
func (c *FS) SyncDir(name string) error { c.op(); return c.Strict.SyncDir(name) }

type crashFile struct {
	vfs.File
	c *FS
}

func (f *crashFile) Write(p []byte) (int, error) { f.c.op(); return f.File.Write(p) }
func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	f.c.op()
	return f.File.WriteAt(p, off)
}
func (f *crashFile) Sync() error               { f.c.op(); return f.File.Sync() }
func (f *crashFile) Truncate(size int64) error { f.c.op(); return f.File.Truncate(size) }
