package artifact

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func sampleArtifact() Artifact {
	payload := []byte(`{"text":"hello, world","n":[1,2,3]}`)
	return Artifact{
		ID:             uuid.MustParse("0190a5f2-1c2b-7d3e-8f40-123456789abc"),
		Tenant:         "acme",
		Workspace:      "support",
		Seq:            42,
		Type:           "chat_turn",
		ActorID:        "user-7",
		SessionID:      "s-1",
		ThreadID:       "t-9",
		IdempotencyKey: "idem-1",
		Timestamp:      1_700_000_000_000_000,
		IngestedAt:     1_700_000_000_000_123,
		Permissions: Permissions{
			Visibility:    "restricted",
			AllowedActors: []string{"user-7", "user-8"},
			DeniedActors:  []string{"user-9"},
			RBACTags:      []string{"eng", ""},
		},
		ContentHash: ContentHash(payload),
		Indexed:     true,
		Payload:     payload,
	}
}

// normalized returns a as DecodeArtifact gives it back: empty slices are nil.
func normalized(a Artifact) Artifact {
	nilIfEmpty := func(ss []string) []string {
		if len(ss) == 0 {
			return nil
		}
		return ss
	}
	a.Permissions.AllowedActors = nilIfEmpty(a.Permissions.AllowedActors)
	a.Permissions.DeniedActors = nilIfEmpty(a.Permissions.DeniedActors)
	a.Permissions.RBACTags = nilIfEmpty(a.Permissions.RBACTags)
	if len(a.Payload) == 0 {
		a.Payload = nil
	}
	return a
}

func TestArtifactRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	cases := []struct {
		name string
		mod  func(a *Artifact)
	}{
		{"full", func(a *Artifact) {}},
		{"zero", func(a *Artifact) { *a = Artifact{} }},
		{"empty slices", func(a *Artifact) {
			a.Permissions.AllowedActors = []string{}
			a.Permissions.DeniedActors = []string{}
			a.Permissions.RBACTags = []string{}
			a.Payload = []byte{}
		}},
		{"negative timestamps", func(a *Artifact) { a.Timestamp = -1; a.IngestedAt = math.MinInt64 }},
		{"extreme ints", func(a *Artifact) { a.Seq = math.MaxUint64; a.Timestamp = math.MaxInt64 }},
		{"not indexed", func(a *Artifact) { a.Indexed = false }},
		{"large payload", func(a *Artifact) { a.Payload = big; a.ContentHash = ContentHash(big) }},
		{"string payload", func(a *Artifact) { a.Payload = []byte(`"héllo\nworld"`) }},
		{"unicode and NUL", func(a *Artifact) { a.Tenant = "tën\x00ant"; a.Workspace = strings.Repeat("w", 300) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := sampleArtifact()
			tc.mod(&in)
			enc := AppendArtifact([]byte("prefix"), &in)
			if string(enc[:6]) != "prefix" {
				t.Fatal("AppendArtifact clobbered dst")
			}
			enc = enc[6:]
			out, n, err := DecodeArtifact(append(enc, "trailing"...))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if n != len(enc) {
				t.Fatalf("consumed %d bytes, encoding has %d", n, len(enc))
			}
			if want := normalized(in); !reflect.DeepEqual(out, want) {
				t.Fatalf("round trip mismatch:\n got %+v\nwant %+v", out, want)
			}
		})
	}
}

func TestArtifactDecodeDoesNotAlias(t *testing.T) {
	in := sampleArtifact()
	enc := AppendArtifact(nil, &in)
	out, _, err := DecodeArtifact(enc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range enc {
		enc[i] = 0xAA
	}
	if !reflect.DeepEqual(out, normalized(sampleArtifact())) {
		t.Fatal("decoded artifact changed when its input was overwritten")
	}
}

func TestArtifactTruncation(t *testing.T) {
	in := sampleArtifact()
	enc := AppendArtifact(nil, &in)
	for i := 0; i < len(enc); i++ {
		_, _, err := DecodeArtifact(enc[:i])
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("prefix of %d/%d bytes: err = %v, want *DecodeError", i, len(enc), err)
		}
		if de.Offset < 0 || de.Offset > i {
			t.Fatalf("prefix of %d bytes: error offset %d out of range", i, de.Offset)
		}
	}
}

func TestSpanRoundTripAndTruncation(t *testing.T) {
	cases := []Span{
		{},
		{
			ID: uuid.New(), ArtifactID: uuid.New(), Ordinal: 3, Start: 10, End: 20,
			Tokens: 5, Timestamp: -12345, Text: "ten chars!",
		},
		{Ordinal: math.MaxUint32, Start: math.MaxUint32, End: math.MaxUint32, Tokens: math.MaxUint32,
			Timestamp: math.MinInt64, Text: strings.Repeat("é", 1000)},
	}
	for i, in := range cases {
		enc := AppendSpan(nil, &in)
		out, n, err := DecodeSpan(enc)
		if err != nil || n != len(enc) || !reflect.DeepEqual(out, in) {
			t.Fatalf("case %d: got %+v, %d, %v; want %+v, %d", i, out, n, err, in, len(enc))
		}
		for j := 0; j < len(enc); j++ {
			if _, _, err := DecodeSpan(enc[:j]); err == nil {
				t.Fatalf("case %d: prefix of %d bytes decoded without error", i, j)
			}
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	a := sampleArtifact()
	good := AppendArtifact(nil, &a)
	// Offset of the Indexed byte: it is followed by the payload length and payload.
	indexedAt := len(good) - len(a.Payload) - 1 - 1
	if good[indexedAt] != 1 {
		t.Fatalf("test setup: byte at %d is %d, not the Indexed flag", indexedAt, good[indexedAt])
	}
	with := func(at int, v ...byte) []byte {
		b := append([]byte(nil), good[:at]...)
		b = append(b, v...)
		return append(b, good[at+1:]...)
	}
	s := Span{Text: "x"}
	span := AppendSpan(nil, &s)
	cases := []struct {
		name  string
		input []byte
		span  bool
		field string
	}{
		{"empty", nil, false, "artifact version"},
		{"bad version", with(0, 3), false, "artifact version"},
		{"bad bool", with(indexedAt, 2), false, "indexed"},
		{"non-minimal varint", with(17, 0x84, 0x00), false, "tenant"},
		{"length beyond input", with(17, 0xff, 0x7f), false, "tenant"},
		{"overflowing varint", with(17, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), false, "tenant"},
		{"span bad version", append([]byte{9}, span[1:]...), true, "span version"},
		{"span ordinal > 32 bits", append(append(append([]byte(nil), span[:33]...), 0x80, 0x80, 0x80, 0x80, 0x10), span[34:]...), true, "span ordinal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.span {
				_, _, err = DecodeSpan(tc.input)
			} else {
				_, _, err = DecodeArtifact(tc.input)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *DecodeError", err)
			}
			if de.Field != tc.field {
				t.Fatalf("error %q names field %q, want %q", err, de.Field, tc.field)
			}
		})
	}
}

func randString(r *rand.Rand, max int) string {
	b := make([]byte, r.IntN(max+1))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return string(b)
}

func randStrings(r *rand.Rand) []string {
	n := r.IntN(4)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = randString(r, 20)
	}
	return ss
}

func randInt64(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return -r.Int64N(1000)
	default:
		return int64(r.Uint64())
	}
}

// TestRandomRoundTrip is a property test: any artifact and span survive
// encode/decode, concatenated encodings decode one after another, and no
// random mutation of an encoding makes the decoder panic.
func TestRandomRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var a Artifact
		for j := range a.ID {
			a.ID[j] = byte(r.UintN(256))
		}
		a.Tenant, a.Workspace = randString(r, 10), randString(r, 10)
		a.Seq = r.Uint64() >> r.UintN(64)
		a.Type, a.ActorID = randString(r, 12), randString(r, 12)
		a.SessionID, a.ThreadID, a.IdempotencyKey = randString(r, 5), randString(r, 5), randString(r, 30)
		a.Timestamp, a.IngestedAt = randInt64(r), randInt64(r)
		a.Permissions = Permissions{Visibility: randString(r, 8), AllowedActors: randStrings(r),
			DeniedActors: randStrings(r), RBACTags: randStrings(r)}
		for j := range a.ContentHash {
			a.ContentHash[j] = byte(r.UintN(256))
		}
		a.Indexed = r.IntN(2) == 1
		if p := randString(r, 300); p != "" {
			a.Payload = []byte(p)
		}
		s := Span{ID: a.ID, ArtifactID: uuid.New(), Ordinal: r.Uint32(), Start: r.Uint32(),
			End: r.Uint32(), Tokens: r.Uint32(), Timestamp: randInt64(r), Text: randString(r, 50)}

		enc := AppendArtifact(nil, &a)
		if len(enc) > MaxArtifactSize(&a) {
			t.Fatalf("iteration %d: artifact encoding of %d bytes, MaxArtifactSize says %d", i, len(enc), MaxArtifactSize(&a))
		}
		if sp := AppendSpan(nil, &s); len(sp) > MaxSpanSize(&s) {
			t.Fatalf("iteration %d: span encoding of %d bytes, MaxSpanSize says %d", i, len(sp), MaxSpanSize(&s))
		}
		enc = AppendSpan(enc, &s)
		got, n, err := DecodeArtifact(enc)
		if err != nil || !reflect.DeepEqual(got, a) {
			t.Fatalf("iteration %d: artifact mismatch (err %v)", i, err)
		}
		gotSpan, m, err := DecodeSpan(enc[n:])
		if err != nil || n+m != len(enc) || !reflect.DeepEqual(gotSpan, s) {
			t.Fatalf("iteration %d: span mismatch (err %v)", i, err)
		}

		// Mutate a few bytes: decoding may fail or succeed, but never panic,
		// and must re-encode to the consumed bytes when it succeeds.
		for k := r.IntN(4) + 1; k > 0; k-- {
			enc[r.IntN(len(enc))] ^= byte(r.UintN(255) + 1)
		}
		if got, n, err := DecodeArtifact(enc); err == nil {
			if re := AppendArtifact(nil, &got); !bytes.Equal(re, enc[:n]) {
				t.Fatalf("iteration %d: mutated input decoded but does not re-encode to the same bytes", i)
			}
		}
		_, _, _ = DecodeSpan(enc)
	}
}

// FuzzDecodeArtifact checks that decoding never panics and that whatever
// decodes re-encodes to exactly the bytes consumed (the encoding is canonical).
func FuzzDecodeArtifact(f *testing.F) {
	a := sampleArtifact()
	f.Add(AppendArtifact(nil, &a))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, n, err := DecodeArtifact(b); err == nil {
			if re := AppendArtifact(nil, &got); !bytes.Equal(re, b[:n]) {
				t.Fatalf("decoded artifact re-encodes differently")
			}
		}
		if got, n, err := DecodeSpan(b); err == nil {
			if re := AppendSpan(nil, &got); !bytes.Equal(re, b[:n]) {
				t.Fatalf("decoded span re-encodes differently")
			}
		}
	})
}
