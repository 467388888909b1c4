//go:build unix

package manifest

import (
	"os"
	"syscall"
)

// flock takes a non-blocking exclusive lock, released when f is closed or the process dies.
func flock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
