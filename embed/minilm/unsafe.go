package minilm

import "unsafe"

// bytesToInt8 reinterprets b as int8 codes without copying, so the
// embedded model's 23 MB of codes are used in place.
func bytesToInt8(b []byte) []int8 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(&b[0])), len(b))
}
