//go:build linux

package segment

import "syscall"

// release drops the mapping's pages from the process's resident set. They
// stay in the page cache, so a later read maps them back without I/O; only
// the process's VmRSS forgets them.
func release(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }
