package artifact

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// An artifact without metadata is written as version 1, byte for byte as
// before metadata existed; one with metadata as version 2, which appends the
// sorted pairs after the payload.
func TestArtifactMetadataEncoding(t *testing.T) {
	a := sampleArtifact()
	v1 := AppendArtifact(nil, &a)
	if v1[0] != ArtifactEncodingVersion {
		t.Fatalf("no metadata: version byte %d, want 1", v1[0])
	}
	a.Metadata = map[string]string{"b": "2", "a": "x"}
	v2 := AppendArtifact(nil, &a)
	if v2[0] != ArtifactMetadataEncodingVersion {
		t.Fatalf("metadata: version byte %d, want 2", v2[0])
	}
	// The documented tail (docs/format/segment.md): count 2, a -> x, b -> 2.
	tail := []byte{0x02, 0x01, 'a', 0x01, 'x', 0x01, 'b', 0x01, '2'}
	if !bytes.Equal(v2[1:], append(append([]byte(nil), v1[1:]...), tail...)) {
		t.Fatalf("version 2 is not version 1's fields plus the metadata tail:\n%x\n%x", v2, v1)
	}
	if len(v2) > MaxArtifactSize(&a) {
		t.Fatalf("encoding is %d bytes, MaxArtifactSize says %d", len(v2), MaxArtifactSize(&a))
	}
	got, n, err := DecodeArtifact(v2)
	if err != nil || n != len(v2) {
		t.Fatalf("decode: n=%d err=%v", n, err)
	}
	if !reflect.DeepEqual(got, normalized(a)) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, a)
	}
	if again := AppendArtifact(nil, &got); !bytes.Equal(again, v2) {
		t.Fatal("re-encoding differs")
	}
	// Old data: a version 1 encoding decodes with no metadata.
	old, _, err := DecodeArtifact(v1)
	if err != nil || old.Metadata != nil {
		t.Fatalf("version 1: metadata %v, err %v", old.Metadata, err)
	}
	// Key order in the map never changes the bytes.
	for range 20 {
		m := map[string]string{}
		for _, k := range []string{"z", "m", "a", "q", "b"} {
			m[k] = k + k
		}
		a.Metadata = m
		x := AppendArtifact(nil, &a)
		a.Metadata = map[string]string{"b": "bb", "q": "qq", "a": "aa", "m": "mm", "z": "zz"}
		if y := AppendArtifact(nil, &a); !bytes.Equal(x, y) {
			t.Fatal("encoding depends on map order")
		}
	}
	// Every truncation fails cleanly.
	for i := 0; i < len(v2); i++ {
		if _, _, err := DecodeArtifact(v2[:i]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", i)
		}
	}
}

func TestArtifactMetadataRejects(t *testing.T) {
	a := sampleArtifact()
	v1 := AppendArtifact(nil, &a)
	v2 := func(tail ...byte) []byte {
		b := append([]byte{ArtifactMetadataEncodingVersion}, v1[1:]...)
		return append(b, tail...)
	}
	for name, b := range map[string][]byte{
		"count 0":           v2(0x00),
		"keys out of order": v2(0x02, 0x01, 'b', 0x00, 0x01, 'a', 0x00),
		"duplicate key":     v2(0x02, 0x01, 'a', 0x00, 0x01, 'a', 0x00),
		"count too large":   v2(0x7f, 0x01, 'a', 0x00),
		"version 3":         append([]byte{3}, v1[1:]...),
	} {
		var de *DecodeError
		if _, _, err := DecodeArtifact(b); !errors.As(err, &de) {
			t.Errorf("%s: err %v, want a *DecodeError", name, err)
		}
	}
	// A version 1 encoding followed by more bytes decodes the artifact and
	// leaves them: they are not metadata.
	if _, n, err := DecodeArtifact(append(append([]byte(nil), v1...), 0x01, 0x01, 'a', 0x00)); err != nil || n != len(v1) {
		t.Fatalf("version 1 with trailing bytes: n=%d err=%v", n, err)
	}
}
