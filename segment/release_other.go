//go:build !linux

package segment

// release is a no-op where madvise(MADV_DONTNEED) is not available.
func release([]byte) {}
