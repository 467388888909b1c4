package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func mustWrite(t *testing.T, f File, s string) {
	t.Helper()
	if _, err := f.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// contents returns the file's bytes, or "<none>" if it does not exist.
func contents(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "<none>"
	}
	must(t, err)
	return string(b)
}

// TestStrictCrash runs each sequence of operations on a fresh Strict, then
// crashes it and checks what survives: only what was fsynced, file contents
// and directory entries separately.
func TestStrictCrash(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, s *Strict, dir string)
		want map[string]string // file -> contents after the crash
	}{
		{"created, not synced", func(t *testing.T, s *Strict, dir string) {
			f, _ := Create(s, filepath.Join(dir, "a"))
			mustWrite(t, f, "hello")
			must(t, f.Sync())
			f.Close()
		}, map[string]string{"a": "<none>", "old": "old data"}},
		{"created, dir synced, contents not", func(t *testing.T, s *Strict, dir string) {
			f, _ := Create(s, filepath.Join(dir, "a"))
			mustWrite(t, f, "hello")
			must(t, s.SyncDir(dir))
			f.Close()
		}, map[string]string{"a": ""}},
		{"created and synced", func(t *testing.T, s *Strict, dir string) {
			f, _ := Create(s, filepath.Join(dir, "a"))
			mustWrite(t, f, "hello")
			must(t, f.Sync())
			must(t, s.SyncDir(dir))
			mustWrite(t, f, " world") // appended, never synced
			f.Close()
		}, map[string]string{"a": "hello"}},
		{"append to old file, not synced", func(t *testing.T, s *Strict, dir string) {
			f, _ := s.OpenFile(filepath.Join(dir, "old"), os.O_WRONLY|os.O_APPEND, 0)
			mustWrite(t, f, " more")
			f.Close()
		}, map[string]string{"old": "old data"}},
		{"truncate, not synced", func(t *testing.T, s *Strict, dir string) {
			f, _ := s.OpenFile(filepath.Join(dir, "old"), os.O_RDWR, 0)
			must(t, f.Truncate(2))
			f.Close()
		}, map[string]string{"old": "old data"}},
		{"rename, dir not synced", func(t *testing.T, s *Strict, dir string) {
			must(t, s.Rename(filepath.Join(dir, "old"), filepath.Join(dir, "new")))
		}, map[string]string{"old": "old data", "new": "<none>"}},
		{"rename over, dir synced", func(t *testing.T, s *Strict, dir string) {
			f, _ := Create(s, filepath.Join(dir, "tmp"))
			mustWrite(t, f, "new data")
			must(t, f.Sync())
			f.Close()
			must(t, s.Rename(filepath.Join(dir, "tmp"), filepath.Join(dir, "old")))
			must(t, s.SyncDir(dir))
		}, map[string]string{"old": "new data", "tmp": "<none>"}},
		{"remove, dir not synced", func(t *testing.T, s *Strict, dir string) {
			must(t, s.Remove(filepath.Join(dir, "old")))
		}, map[string]string{"old": "old data"}},
		{"remove, dir synced", func(t *testing.T, s *Strict, dir string) {
			must(t, s.Remove(filepath.Join(dir, "old")))
			must(t, s.SyncDir(dir))
		}, map[string]string{"old": "<none>"}},
		{"new subdirectory", func(t *testing.T, s *Strict, dir string) {
			sub := filepath.Join(dir, "sub")
			must(t, s.MkdirAll(sub, 0o755))
			f, _ := Create(s, filepath.Join(sub, "x"))
			mustWrite(t, f, "x")
			must(t, f.Sync())
			must(t, s.SyncDir(sub))
			f.Close()
		}, map[string]string{"sub/x": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "old"), []byte("old data"), 0o644))
			s, err := NewStrict(dir)
			must(t, err)
			tt.run(t, s, dir)
			must(t, s.Crash())
			for name, want := range tt.want {
				if got := contents(t, filepath.Join(dir, name)); got != want {
					t.Errorf("%s after crash = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestStrictDownAfterCrash: the dead process can change nothing, and after
// Restart the file system works again.
func TestStrictDownAfterCrash(t *testing.T) {
	dir := t.TempDir()
	s, err := NewStrict(dir)
	must(t, err)
	f, err := Create(s, filepath.Join(dir, "a"))
	must(t, err)
	must(t, s.Crash())
	if _, err := f.Write([]byte("x")); !errors.Is(err, ErrCrashed) {
		t.Fatalf("write after crash: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, ErrCrashed) {
		t.Fatalf("sync after crash: %v", err)
	}
	if _, err := Create(s, filepath.Join(dir, "b")); !errors.Is(err, ErrCrashed) {
		t.Fatalf("create after crash: %v", err)
	}
	if err := s.SyncDir(dir); !errors.Is(err, ErrCrashed) {
		t.Fatalf("syncdir after crash: %v", err)
	}
	f.Close()
	s.Restart()
	g, err := Create(s, filepath.Join(dir, "b"))
	must(t, err)
	mustWrite(t, g, "ok")
	must(t, g.Sync())
	must(t, s.SyncDir(dir))
	g.Close()
	if _, err := s.OpenFile(filepath.Join(t.TempDir(), "x"), os.O_RDONLY, 0); err == nil {
		t.Fatal("opened a file outside the root")
	}
}

func TestInject(t *testing.T) {
	dir := t.TempDir()
	fi := NewInject(Default)
	f, err := Create(fi, filepath.Join(dir, "a"))
	must(t, err)
	eio := errors.New("injected EIO")
	fi.FailNth(OpSync, 2, eio)
	must(t, f.Sync())
	if err := f.Sync(); !errors.Is(err, eio) {
		t.Fatalf("second sync: %v, want %v", err, eio)
	}
	must(t, f.Sync())

	fi.SetSpace(5)
	n, err := f.Write([]byte("0123456789"))
	if n != 5 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past the space: %d, %v", n, err)
	}
	if n, err := f.Write([]byte("x")); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %d, %v", n, err)
	}
	fi.SetSpace(-1)
	mustWrite(t, f, "!")
	f.Close()
	if got := contents(t, filepath.Join(dir, "a")); got != "01234!" {
		t.Fatalf("file = %q", got)
	}

	fi.FailAlways(OpRename, syscall.EIO)
	for range 2 {
		if err := fi.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")); !errors.Is(err, syscall.EIO) {
			t.Fatalf("rename: %v", err)
		}
	}
	fi.Reset()
	must(t, fi.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")))
	if fi.Count(OpRename) != 3 || fi.Count(OpSync) != 3 {
		t.Fatalf("counts: rename %d, sync %d", fi.Count(OpRename), fi.Count(OpSync))
	}
}

// RemoveDir removes a directory of files, and takes one already gone as
// removed.
func TestRemoveDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := Default.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveDir(Default, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s after RemoveDir: %v", dir, err)
	}
	if err := RemoveDir(Default, dir); err != nil {
		t.Fatalf("RemoveDir of a removed directory: %v", err)
	}
}
