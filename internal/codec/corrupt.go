// Package codec is the kit Loci's storage formats share: the one corruption
// marker, ErrCorrupt, that every error about damaged stored bytes matches
// (as Pebble marks its own with base.ErrCorruption), so that a caller tells
// "the data is damaged" from "the disk failed" with one errors.Is whatever
// the format.
package codec

import (
	"errors"
	"fmt"
)

// ErrCorrupt is matched (errors.Is) by every error that reports stored
// bytes breaking their format: a bad checksum, magic or version, a
// truncated or malformed field. An I/O error is not corruption.
var ErrCorrupt = errors.New("corrupt data")

// corruptError is an error marked as corruption; its text is the
// wrapped error's, unchanged.
type corruptError struct{ err error }

func (e *corruptError) Error() string   { return e.err.Error() }
func (e *corruptError) Unwrap() []error { return []error{e.err, ErrCorrupt} }

// Mark returns err marked as corruption, its text unchanged (nil for nil).
func Mark(err error) error {
	if err == nil {
		return nil
	}
	return &corruptError{err}
}

// Errorf is fmt.Errorf marked as corruption.
func Errorf(format string, args ...any) error { return Mark(fmt.Errorf(format, args...)) }

// Sentinel is errors.New marked as corruption: a package's own corruption
// sentinel that also matches ErrCorrupt.
func Sentinel(text string) error { return Mark(errors.New(text)) }
