package segment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/loci-memory/loci/artifact"
)

// asCorruption fails the test unless err is a *CorruptionError naming file
// with an offset inside a file of size bytes.
func asCorruption(t *testing.T, err error, file string, size int, context string) *CorruptionError {
	t.Helper()
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("%s: err = %v (%T), want *CorruptionError", context, err, err)
	}
	if ce.File != file || ce.Offset < 0 || ce.Offset > int64(size) {
		t.Fatalf("%s: %v: want file %q and an offset in [0, %d]", context, ce, file, size)
	}
	return ce
}

// accessorsAgree runs every accessor of s and fails the test if any returns
// data different from want; errors are fine but must be *CorruptionError.
// It returns whether any accessor reported an error.
func accessorsAgree(t *testing.T, s *Segment, want []WorkspaceData, size int, context string) bool {
	t.Helper()
	sawErr := false
	check := func(err error, what string) bool {
		if err != nil {
			asCorruption(t, err, s.Path(), size, context+": "+what)
			sawErr = true
			return false
		}
		return true
	}
	if got := s.Workspaces(); len(got) != len(want) {
		t.Fatalf("%s: %d workspaces, want %d", context, len(got), len(want))
	}
	for i, w := range want {
		if got, ok := s.FindWorkspace(w.Tenant, w.Workspace); !ok || got != i {
			t.Fatalf("%s: FindWorkspace(%q, %q) = %d, %v", context, w.Tenant, w.Workspace, got, ok)
		}
		var arts []*artifact.Artifact
		err := s.Artifacts(i, func(a *artifact.Artifact) error { arts = append(arts, a); return nil })
		for k, a := range arts {
			if !reflect.DeepEqual(a, w.Artifacts[k]) {
				t.Fatalf("%s: Artifacts(%d)[%d] differs from what was written", context, i, k)
			}
		}
		if check(err, "Artifacts") && len(arts) != len(w.Artifacts) {
			t.Fatalf("%s: Artifacts(%d) returned %d artifacts, want %d", context, i, len(arts), len(w.Artifacts))
		}
		wantSpans := expectedSpans(w)
		var spans []artifact.Span
		err = s.Spans(i, func(sp artifact.Span) error { spans = append(spans, sp); return nil })
		for k, sp := range spans {
			if !reflect.DeepEqual(sp, wantSpans[k]) {
				t.Fatalf("%s: Spans(%d)[%d] differs from what was written", context, i, k)
			}
		}
		if check(err, "Spans") && len(spans) != len(wantSpans) {
			t.Fatalf("%s: Spans(%d) returned %d spans, want %d", context, i, len(spans), len(wantSpans))
		}
		for ord, a := range w.Artifacts {
			wantRef := Ref{WS: i, Ordinal: ord, Seq: a.Seq}
			if ref, ok := s.FindArtifact(a.ID); !ok || ref != wantRef {
				t.Fatalf("%s: FindArtifact(%s) = %+v, %v, want %+v", context, a.ID, ref, ok, wantRef)
			}
			if a.IdempotencyKey != "" {
				if ref, ok := s.FindIdempotencyKey(i, a.IdempotencyKey); !ok || ref != wantRef {
					t.Fatalf("%s: FindIdempotencyKey(%q) = %+v, %v", context, a.IdempotencyKey, ref, ok)
				}
			}
			got, err := s.Artifact(wantRef)
			if check(err, "Artifact") && !reflect.DeepEqual(got, a) {
				t.Fatalf("%s: Artifact(%+v) differs from what was written", context, wantRef)
			}
			sp, err := s.ArtifactSpans(wantRef)
			if check(err, "ArtifactSpans") && !reflect.DeepEqual(sp, artifactSpans(w, a.ID)) {
				t.Fatalf("%s: ArtifactSpans(%+v) differs from what was written", context, wantRef)
			}
		}
	}
	return sawErr
}

// TestBitFlips flips every bit of a small segment, one at a time: Open or
// Verify must report a *CorruptionError, and no accessor may return data that
// differs from what was written.
func TestBitFlips(t *testing.T) {
	path, want := writeFixture(t, false)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(orig) > 4096 {
		t.Fatalf("fixture is %d bytes; keep it small", len(orig))
	}
	const name = "flipped.seg"
	b := make([]byte, len(orig))
	openFailures := 0
	for off := range orig {
		for bit := 0; bit < 8; bit++ {
			copy(b, orig)
			b[off] ^= 1 << bit
			ctx := fmt.Sprintf("flip of bit %d at offset %d", bit, off)
			s, err := OpenBytes(name, b)
			if err != nil {
				asCorruption(t, err, name, len(b), ctx+": OpenBytes")
				openFailures++
				continue
			}
			accessorsAgree(t, s, want, len(b), ctx)
			asCorruption(t, s.Verify(), name, len(b), ctx+": Verify")
		}
	}
	t.Logf("%d bytes, %d flips: %d caught by Open, the rest by Verify", len(orig), 8*len(orig), openFailures)
}

// TestTruncation opens every prefix of a segment (in memory) and a few real
// truncated files: all must fail with a *CorruptionError.
func TestTruncation(t *testing.T) {
	path, _ := writeFixture(t, false)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(orig); n++ {
		_, err := OpenBytes("cut", orig[:n])
		asCorruption(t, err, "cut", n, "prefix of "+strconv.Itoa(n)+" bytes")
	}
	dir := t.TempDir()
	for _, n := range []int{0, 1, 8, minFileSize - 1, minFileSize, len(orig) / 2, len(orig) - footerSize, len(orig) - 1} {
		p := filepath.Join(dir, FileName(3))
		if err := os.WriteFile(p, orig[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(p)
		asCorruption(t, err, p, n, "file truncated to "+strconv.Itoa(n)+" bytes")
	}
	// Appended garbage is caught too: the footer is no longer at the end.
	_, err = OpenBytes("long", append(append([]byte(nil), orig...), 0, 0, 0, 0, 0, 0, 0, 0))
	asCorruption(t, err, "long", len(orig)+8, "appended bytes")
}

// TestCorruptionReports checks the reason and offset of targeted faults.
func TestCorruptionReports(t *testing.T) {
	path, want := writeFixture(t, false)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	good, err := OpenBytes("good", orig)
	if err != nil {
		t.Fatal(err)
	}
	size := uint64(len(orig))
	w := good.ws[1] // acme/support
	entry0 := w.artifacts.off + le.Uint64(orig[w.table.off+artRowEntry:])
	text0 := w.text.off + le.Uint64(orig[w.spans.off+spanRowTextOff:])
	var wsSection, padding uint64
	for _, e := range good.toc {
		if e.kind == KindWorkspaces {
			wsSection = e.off
		}
		if end := e.off + e.length; end%8 != 0 && padding == 0 {
			padding = end
		}
	}
	if padding == 0 {
		t.Fatal("fixture has no padding to corrupt")
	}

	type when int
	const (
		atOpen when = iota
		atRead
	)
	cases := []struct {
		name   string
		off    uint64 // byte to flip
		when   when
		offset uint64 // expected CorruptionError.Offset
		reason string
	}{
		{"header magic", 0, atOpen, 0, "bad header magic"},
		{"header version", 7, atOpen, 7, "unsupported header format version"},
		{"footer magic", size - 1, atOpen, size - 8, "bad footer magic"},
		{"footer field", size - footerSize + ftVersion, atOpen, size - footerSize, "footer checksum mismatch"},
		{"TOC", good.tocOff + 9, atOpen, good.tocOff, "TOC checksum mismatch"},
		{"padding", padding, atOpen, padding, "non-zero padding"},
		{"WORKSPACES", wsSection + 9, atOpen, wsSection, "WORKSPACES section (workspace all) checksum mismatch"},
		{"ARTIFACT_TABLE", w.table.off + 3, atOpen, w.table.off, "ARTIFACT_TABLE section (workspace 1) checksum mismatch"},
		{"SPANS", w.spans.off + 70, atOpen, w.spans.off, "SPANS section (workspace 1) checksum mismatch"},
		{"IDEMPOTENCY", w.idem.off, atOpen, w.idem.off, "IDEMPOTENCY section (workspace 1) checksum mismatch"},
		{"ARTIFACT_ID_INDEX", good.idIndex.off + 40, atOpen, good.idIndex.off, "ARTIFACT_ID_INDEX section"},
		{"artifact entry body", entry0 + entryHeaderSize + 5, atRead, entry0, "artifact entry checksum mismatch"},
		{"artifact entry length", entry0 + 4, atRead, entry0, "artifact entry"},
		{"span text", text0 + 2, atRead, text0, "text checksum mismatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte(nil), orig...)
			b[tc.off] ^= 0x10
			s, err := OpenBytes("bad", b)
			if tc.when == atOpen {
				ce := asCorruption(t, err, "bad", len(b), "OpenBytes")
				if uint64(ce.Offset) != tc.offset || !strings.Contains(ce.Reason, tc.reason) {
					t.Fatalf("got %v; want offset %d and a reason containing %q", ce, tc.offset, tc.reason)
				}
				if !strings.HasPrefix(ce.Error(), "segment bad at offset ") {
					t.Fatalf("Error() = %q", ce.Error())
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenBytes: %v, want the fault to be found on read", err)
			}
			accessorsAgree(t, s, want, len(b), tc.name)
			var readErr error
			if tc.name == "span text" {
				readErr = s.Spans(1, func(artifact.Span) error { return nil })
			} else {
				_, readErr = s.Artifact(Ref{WS: 1, Ordinal: 0})
			}
			for _, err := range []error{readErr, s.Verify()} {
				ce := asCorruption(t, err, "bad", len(b), "read")
				if !strings.Contains(ce.Reason, tc.reason) && !strings.Contains(ce.Reason, "checksum mismatch") {
					t.Fatalf("got %v; want a reason containing %q", ce, tc.reason)
				}
			}
			ce := asCorruption(t, readErr, "bad", len(b), "read")
			if uint64(ce.Offset) != tc.offset {
				t.Fatalf("got %v; want offset %d", ce, tc.offset)
			}
		})
	}
}

func TestOpenChecksFileName(t *testing.T) {
	path, _ := writeFixture(t, false)
	dir := filepath.Dir(path)
	renamed := filepath.Join(dir, FileName(4))
	if err := os.Rename(path, renamed); err != nil {
		t.Fatal(err)
	}
	_, err := Open(renamed)
	ce := asCorruption(t, err, renamed, 1<<20, "renamed segment")
	if !strings.Contains(ce.Reason, "segment id 3") {
		t.Fatalf("reason %q does not name the footer's id", ce.Reason)
	}
	other := filepath.Join(dir, "copy-of-three.seg")
	if err := os.Rename(renamed, other); err != nil {
		t.Fatal(err)
	}
	s, err := Open(other)
	if err != nil {
		t.Fatalf("a segment under a free-form name must open: %v", err)
	}
	s.Close()
	if _, err := Open(filepath.Join(dir, "missing.seg")); err == nil || errors.As(err, new(*CorruptionError)) {
		t.Fatalf("missing file: err = %v, want a plain I/O error", err)
	}
}

// addSection rebuilds a segment image with one more section before the TOC,
// as a later format version might write it.
func addSection(t *testing.T, b []byte, kind, flags uint16, ws uint32, content []byte, badCRC bool) []byte {
	t.Helper()
	fo := uint64(len(b)) - footerSize
	tocOff := le.Uint64(b[fo+ftTOCOffset:])
	n := le.Uint32(b[tocOff:])
	out := append([]byte(nil), b[:tocOff]...)
	secOff := uint64(len(out))
	out = append(out, content...)
	for len(out)%8 != 0 {
		out = append(out, 0)
	}
	newTOC := uint64(len(out))
	out = le.AppendUint32(out, n+1)
	out = le.AppendUint32(out, 0)
	out = append(out, b[tocOff+tocHeaderSize:fo]...)
	sum := crc(content)
	if badCRC {
		sum ^= 1
	}
	out = le.AppendUint16(out, kind)
	out = le.AppendUint16(out, flags)
	out = le.AppendUint32(out, ws)
	out = le.AppendUint64(out, secOff)
	out = le.AppendUint64(out, uint64(len(content)))
	out = le.AppendUint32(out, sum)
	out = le.AppendUint32(out, 0)
	tocCRC := crc(out[newTOC:])
	ft := le.AppendUint64(nil, newTOC)
	ft = le.AppendUint64(ft, le.Uint64(b[fo+ftSegmentID:]))
	ft = le.AppendUint32(ft, uint32(uint64(len(out))-newTOC))
	ft = le.AppendUint32(ft, tocCRC)
	ft = le.AppendUint32(ft, FormatVersion)
	ft = le.AppendUint32(ft, crc(ft))
	ft = append(ft, footerMagic...)
	return append(out, ft...)
}

// TestUnknownSectionsSkipped checks forward compatibility: sections of reserved
// or unknown kinds are checked for layout and checksum, then ignored.
func TestUnknownSectionsSkipped(t *testing.T) {
	path, want := writeFixture(t, false)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		kind    uint16
		flags   uint16
		ws      uint32
		badCRC  bool
		openErr string
		verErr  string
	}{
		{name: "reserved per-workspace", kind: KindPostings, ws: 1},
		{name: "reserved segment-wide", kind: KindState, ws: allWorkspaces},
		{name: "unknown kind", kind: 999, ws: 0},
		{name: "unknown deferred", kind: 1000, ws: 2, flags: flagDeferredCRC},
		{name: "bad checksum", kind: KindVectors, ws: 1, badCRC: true, openErr: "VECTORS section (workspace 1) checksum mismatch"},
		{name: "bad checksum deferred", kind: 1001, ws: 1, flags: flagDeferredCRC, badCRC: true, verErr: "kind 1001 section"},
		{name: "bad workspace", kind: KindFeedback, ws: 3, openErr: "workspace index 3"},
		{name: "unknown flag", kind: KindReceipts, ws: 0, flags: 2, openErr: "unknown flags"},
		{name: "kind zero", kind: 0, ws: 0, openErr: "kind 0"},
		{name: "duplicate known", kind: KindSpans, ws: 0, openErr: "second SPANS"},
		{name: "known segment-wide with workspace", kind: KindArtifactIDIndex, ws: 0, openErr: "segment-wide"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := addSection(t, orig, tc.kind, tc.flags, tc.ws, []byte("future data!"), tc.badCRC)
			s, err := OpenBytes("x", b)
			if tc.openErr != "" {
				ce := asCorruption(t, err, "x", len(b), "OpenBytes")
				if !strings.Contains(ce.Reason, tc.openErr) {
					t.Fatalf("got %v, want %q", ce, tc.openErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if accessorsAgree(t, s, want, len(b), tc.name) {
				t.Fatal("accessor failed")
			}
			err = s.Verify()
			if tc.verErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if ce := asCorruption(t, err, "x", len(b), "Verify"); !strings.Contains(ce.Reason, tc.verErr) {
				t.Fatalf("got %v, want %q", ce, tc.verErr)
			}
		})
	}
	// The hand-built image is itself a valid segment.
	if _, err := OpenBytes("same", addSection(t, orig, 999, 0, allWorkspaces, nil, false)); err != nil {
		t.Fatal(err)
	}
}
