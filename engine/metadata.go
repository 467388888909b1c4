package engine

import (
	"fmt"
	"maps"
	"unicode/utf8"

	"github.com/loci-memory/loci/artifact"
)

// Bounds of an artifact's metadata (and of a context pack's metadata
// filter): at most MaxMetadataKeys pairs; each key 1 to MaxMetadataKeyLength
// bytes of A-Z a-z 0-9 . _ : -; each value at most MaxMetadataValueLength
// bytes of UTF-8 without control characters; keys and values together at
// most MaxMetadataBytes bytes.
const (
	MaxMetadataKeys        = 32
	MaxMetadataKeyLength   = 64
	MaxMetadataValueLength = 1024
	MaxMetadataBytes       = 8 << 10
)

// CheckMetadata checks metadata against the bounds; field names the
// object as the caller knows it (the API's "metadata", IngestInput's
// "Metadata"), and errors name the offending key as field.key. Keys
// are checked in sorted order, so the error is the same whatever the order
// they were sent in.
func CheckMetadata(field string, m map[string]string) *InvalidError {
	if len(m) > MaxMetadataKeys {
		return &InvalidError{field, fmt.Sprintf("has %d keys, more than the limit of %d", len(m), MaxMetadataKeys)}
	}
	total := 0
	for _, k := range artifact.MetadataKeys(m) {
		v := m[k]
		if len(k) == 0 || len(k) > MaxMetadataKeyLength {
			return &InvalidError{field, fmt.Sprintf("key %q is %d bytes; a key is 1 to %d bytes of A-Z a-z 0-9 . _ : -", k, len(k), MaxMetadataKeyLength)}
		}
		for i := 0; i < len(k); i++ {
			if c := k[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
				return &InvalidError{field, fmt.Sprintf("key %q: byte %d (%q) is not allowed; a key is 1 to %d bytes of A-Z a-z 0-9 . _ : -", k, i, c, MaxMetadataKeyLength)}
			}
		}
		vf := field + "." + k
		switch {
		case len(v) > MaxMetadataValueLength:
			return &InvalidError{vf, fmt.Sprintf("is %d bytes, longer than the limit of %d", len(v), MaxMetadataValueLength)}
		case !utf8.ValidString(v):
			return &InvalidError{vf, "is not valid UTF-8"}
		}
		for _, r := range v {
			if r < 0x20 || r == 0x7f {
				return &InvalidError{vf, "contains a control character"}
			}
		}
		total += len(k) + len(v)
	}
	if total > MaxMetadataBytes {
		return &InvalidError{field, fmt.Sprintf("keys and values total %d bytes, more than the limit of %d", total, MaxMetadataBytes)}
	}
	return nil
}

// CloneMetadata copies m; empty gives nil, the stored form of none.
func CloneMetadata(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// sameMetadata compares metadata as stored: nil and empty are the same.
func sameMetadata(a, b map[string]string) bool {
	return len(a) == len(b) && maps.Equal(a, b)
}

// MetadataMatches reports whether an artifact's metadata holds every pair
// of filter with exactly its value (an empty filter matches everything).
func MetadataMatches(md, filter map[string]string) bool {
	for k, v := range filter {
		if got, ok := md[k]; !ok || got != v {
			return false
		}
	}
	return true
}
