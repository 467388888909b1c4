package segment

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/loci-memory/loci/artifact"
)

// detUUID returns a deterministic uuid so that test files are reproducible.
func detUUID(r *rand.Rand) uuid.UUID {
	var u uuid.UUID
	for i := range u {
		u[i] = byte(r.UintN(256))
	}
	return u
}

func newArtifact(r *rand.Rand, tenant, ws string, seq uint64, key string, payload []byte) *artifact.Artifact {
	return &artifact.Artifact{
		ID:             detUUID(r),
		Tenant:         tenant,
		Workspace:      ws,
		Seq:            seq,
		Type:           "document",
		ActorID:        "actor-" + fmt.Sprint(seq),
		SessionID:      "session",
		IdempotencyKey: key,
		Timestamp:      int64(seq) * 1000,
		IngestedAt:     int64(seq)*1000 + 7,
		Permissions:    artifact.Permissions{Visibility: "public"},
		ContentHash:    artifact.ContentHash(payload),
		Indexed:        true,
		Payload:        payload,
	}
}

func spansFor(r *rand.Rand, a *artifact.Artifact, n int) []artifact.Span {
	var out []artifact.Span
	for i := 0; i < n; i++ {
		text := fmt.Sprintf("span %d of %s: some text é", i, a.ID)
		out = append(out, artifact.Span{
			ID: detUUID(r), ArtifactID: a.ID, Ordinal: uint32(i),
			Start: uint32(i * 100), End: uint32(i*100 + len(text)), Tokens: uint32(3 + i),
			Timestamp: a.Timestamp, Text: text,
		})
	}
	return out
}

// fixture returns workspaces in deliberately unsorted order, with spans in
// shuffled order, covering the payload shapes and edge cases.
func fixture(big bool) []WorkspaceData {
	r := rand.New(rand.NewPCG(7, 11))
	compressible := []byte(`{"title":"report","body":"` + strings.Repeat("all work and no play ", 40) + `"}`)
	incompressible := make([]byte, 300)
	for i := range incompressible {
		incompressible[i] = byte(r.UintN(256))
	}
	if !big {
		compressible = []byte(`{"body":"` + strings.Repeat("abc ", 30) + `"}`)
		incompressible = incompressible[:80]
	}

	// acme/support: object, string, array payloads; one artifact without spans.
	a1 := newArtifact(r, "acme", "support", 10, "key-b", compressible)
	a2 := newArtifact(r, "acme", "support", 11, "", []byte(`"a plain \"string\" payload"`))
	a3 := newArtifact(r, "acme", "support", 15, "key-a", []byte(`[1,2,{"x":null}]`))
	a3.Permissions = artifact.Permissions{Visibility: "restricted", AllowedActors: []string{"u1", "u2"},
		DeniedActors: []string{"u3"}, RBACTags: []string{"eng"}}
	a3.Indexed = false
	supportSpans := append(append(spansFor(r, a1, 3), spansFor(r, a2, 0)...), spansFor(r, a3, 2)...)
	r.Shuffle(len(supportSpans), func(i, j int) { supportSpans[i], supportSpans[j] = supportSpans[j], supportSpans[i] })

	// globex/support: same workspace name, other tenant; incompressible payload.
	g1 := newArtifact(r, "globex", "support", 12, "key-a", incompressible)
	g2 := newArtifact(r, "globex", "support", 20, "key-z", []byte(`{}`))
	globexSpans := append(spansFor(r, g1, 1), spansFor(r, g2, 1)...)

	// acme/empty: no artifacts at all.
	return []WorkspaceData{
		{Tenant: "globex", Workspace: "support", Artifacts: []*artifact.Artifact{g1, g2}, Spans: globexSpans},
		{Tenant: "acme", Workspace: "support", Artifacts: []*artifact.Artifact{a1, a2, a3}, Spans: supportSpans},
		{Tenant: "acme", Workspace: "empty"},
	}
}

// expectedSpans returns ws's spans in file order: artifact order, then Ordinal.
func expectedSpans(ws WorkspaceData) []artifact.Span {
	var out []artifact.Span
	for _, a := range ws.Artifacts {
		out = append(out, artifactSpans(ws, a.ID)...)
	}
	return out
}

func artifactSpans(ws WorkspaceData, id uuid.UUID) []artifact.Span {
	var out []artifact.Span
	for _, s := range ws.Spans {
		if s.ArtifactID == id {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b artifact.Span) int { return int(a.Ordinal) - int(b.Ordinal) })
	return out
}

func sortedFixture(ws []WorkspaceData) []WorkspaceData {
	out := slices.Clone(ws)
	slices.SortFunc(out, func(a, b WorkspaceData) int {
		return compareWS(a.Tenant, a.Workspace, b.Tenant, b.Workspace)
	})
	return out
}

func writeFixture(t testing.TB, big bool) (string, []WorkspaceData) {
	t.Helper()
	dir := t.TempDir()
	ws := fixture(big)
	if _, err := Write(dir, 3, ws); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, FileName(3)), sortedFixture(ws)
}

func TestFileName(t *testing.T) {
	if got := FileName(42); got != "0000000000000042.seg" {
		t.Fatalf("FileName(42) = %q", got)
	}
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	input := fixture(true)
	info, err := Write(dir, 42, input)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName(42))
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != FileName(42) {
		t.Fatalf("directory holds %v, want only %s", entries, FileName(42))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Info{ID: 42, Size: fi.Size(), MinSeq: 10, MaxSeq: 20, Workspaces: 3, Artifacts: 5, Spans: 7}
	if info != want {
		t.Fatalf("Write returned %+v, want %+v", info, want)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seg, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := OpenBytes("mem", raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Segment{seg, mem} {
		if s.Info() != want {
			t.Fatalf("%s: Info() = %+v, want %+v", s.Path(), s.Info(), want)
		}
		checkContents(t, s, sortedFixture(input))
		if err := s.Verify(); err != nil {
			t.Fatalf("%s: Verify: %v", s.Path(), err)
		}
	}
	if seg.Path() != path {
		t.Fatalf("Path() = %q, want %q", seg.Path(), path)
	}

	// Both compressed and uncompressed entries are exercised.
	flags := map[byte]int{}
	for _, w := range seg.ws {
		for ord := 0; ord < w.Artifacts; ord++ {
			rel := le.Uint64(raw[w.table.off+uint64(ord)*artRowSize+artRowEntry:])
			flags[raw[w.artifacts.off+rel+12]]++
		}
	}
	if flags[0] == 0 || flags[entryFlagZstd] == 0 {
		t.Fatalf("entry flags %v: want both raw and zstd entries", flags)
	}

	// Returned data does not alias the mapping: it survives Close.
	a, err := seg.Artifact(Ref{WS: 1, Ordinal: 0})
	if err != nil {
		t.Fatal(err)
	}
	spans, err := seg.ArtifactSpans(Ref{WS: 1, Ordinal: 0})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := seg.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	sorted := sortedFixture(input)
	if !reflect.DeepEqual(a, sorted[1].Artifacts[0]) || !reflect.DeepEqual(spans, artifactSpans(sorted[1], a.ID)) {
		t.Fatal("data read before Close changed after Close")
	}
	if _, err := seg.Artifact(Ref{WS: 1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Artifact after Close: %v, want ErrClosed", err)
	}
	if _, ok := seg.FindArtifact(a.ID); ok {
		t.Fatal("FindArtifact after Close found something")
	}
	if err := seg.Verify(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Verify after Close: %v, want ErrClosed", err)
	}
}

// checkContents checks that every accessor of s returns exactly want.
func checkContents(t *testing.T, s *Segment, want []WorkspaceData) {
	t.Helper()
	var infos []WorkspaceInfo
	for _, w := range want {
		wi := WorkspaceInfo{Tenant: w.Tenant, Workspace: w.Workspace, Artifacts: len(w.Artifacts), Spans: len(w.Spans)}
		if n := len(w.Artifacts); n > 0 {
			wi.MinSeq, wi.MaxSeq = w.Artifacts[0].Seq, w.Artifacts[n-1].Seq
		}
		infos = append(infos, wi)
	}
	if got := s.Workspaces(); !reflect.DeepEqual(got, infos) {
		t.Fatalf("Workspaces() = %+v, want %+v", got, infos)
	}
	for i, w := range want {
		if got := s.Workspace(i); got != infos[i] {
			t.Fatalf("Workspace(%d) = %+v, want %+v", i, got, infos[i])
		}
		// One workspace's summary copies nothing else: lookups in a
		// segment of 100,000 workspaces must not copy them all.
		if allocs := testing.AllocsPerRun(5, func() { _ = s.Workspace(i) }); allocs != 0 {
			t.Fatalf("Workspace(%d) allocates %.0f times", i, allocs)
		}
		if got, ok := s.FindWorkspace(w.Tenant, w.Workspace); !ok || got != i {
			t.Fatalf("FindWorkspace(%q, %q) = %d, %v; want %d", w.Tenant, w.Workspace, got, ok, i)
		}
		var got []*artifact.Artifact
		if err := s.Artifacts(i, func(a *artifact.Artifact) error { got = append(got, a); return nil }); err != nil {
			t.Fatalf("Artifacts(%d): %v", i, err)
		}
		if !reflect.DeepEqual(got, w.Artifacts) {
			t.Fatalf("Artifacts(%d) differ from the input", i)
		}
		var spans []artifact.Span
		if err := s.Spans(i, func(sp artifact.Span) error { spans = append(spans, sp); return nil }); err != nil {
			t.Fatalf("Spans(%d): %v", i, err)
		}
		if !reflect.DeepEqual(spans, expectedSpans(w)) {
			t.Fatalf("Spans(%d) = %+v\nwant %+v", i, spans, expectedSpans(w))
		}
		if s.SpanCount(i) != len(w.Spans) {
			t.Fatalf("SpanCount(%d) = %d, want %d", i, s.SpanCount(i), len(w.Spans))
		}
		for ord, a := range w.Artifacts {
			wantRef := Ref{WS: i, Ordinal: ord, Seq: a.Seq}
			ref, ok := s.FindArtifact(a.ID)
			if !ok || ref != wantRef {
				t.Fatalf("FindArtifact(%s) = %+v, %v; want %+v", a.ID, ref, ok, wantRef)
			}
			got, err := s.Artifact(ref)
			if err != nil || !reflect.DeepEqual(got, a) {
				t.Fatalf("Artifact(%+v) = %+v, %v; want %+v", ref, got, err, a)
			}
			spans, err := s.ArtifactSpans(ref)
			if err != nil || !reflect.DeepEqual(spans, artifactSpans(w, a.ID)) {
				t.Fatalf("ArtifactSpans(%+v) = %+v, %v", ref, spans, err)
			}
			if a.IdempotencyKey != "" {
				ref, ok := s.FindIdempotencyKey(i, a.IdempotencyKey)
				if !ok || ref != wantRef {
					t.Fatalf("FindIdempotencyKey(%d, %q) = %+v, %v; want %+v", i, a.IdempotencyKey, ref, ok, wantRef)
				}
			}
		}
	}
	misses := []struct {
		ws  int
		key string
	}{{0, "key-a"}, {1, "key-c"}, {1, ""}, {1, "key-"}, {1, "key-b0"}, {2, "key-zz"}, {-1, "key-a"}, {9, "key-a"}}
	for _, m := range misses {
		if ref, ok := s.FindIdempotencyKey(m.ws, m.key); ok {
			t.Fatalf("FindIdempotencyKey(%d, %q) = %+v, want a miss", m.ws, m.key, ref)
		}
	}
	if ref, ok := s.FindArtifact(uuid.Nil); ok {
		t.Fatalf("FindArtifact(nil uuid) = %+v, want a miss", ref)
	}
	if ref, ok := s.FindArtifact(uuid.Max); ok {
		t.Fatalf("FindArtifact(max uuid) = %+v, want a miss", ref)
	}
	if _, ok := s.FindWorkspace("acme", "nope"); ok {
		t.Fatal("FindWorkspace(acme, nope) found something")
	}
	if _, ok := s.FindWorkspace("", ""); ok {
		t.Fatal("FindWorkspace(\"\", \"\") found something")
	}
	for _, bad := range []Ref{{WS: -1}, {WS: len(want)}, {WS: 0, Ordinal: -1}, {WS: 0, Ordinal: 1 << 20}} {
		if _, err := s.Artifact(bad); err == nil {
			t.Fatalf("Artifact(%+v) succeeded", bad)
		}
		if _, err := s.ArtifactSpans(bad); err == nil {
			t.Fatalf("ArtifactSpans(%+v) succeeded", bad)
		}
	}
	if err := s.Spans(len(want), func(artifact.Span) error { return nil }); err == nil {
		t.Fatal("Spans(out of range) succeeded")
	}
	if err := s.Artifacts(-1, func(*artifact.Artifact) error { return nil }); err == nil {
		t.Fatal("Artifacts(-1) succeeded")
	}
}

func TestEmptySegment(t *testing.T) {
	dir := t.TempDir()
	info, err := Write(dir, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, FileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Info() != info || info.Workspaces != 0 || info.Size != headerSize+8+tocHeaderSize+2*tocEntrySize+footerSize {
		t.Fatalf("Info() = %+v, Write returned %+v", s.Info(), info)
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestCallbackErrorStopsIteration(t *testing.T) {
	path, _ := writeFixture(t, false)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stop := errors.New("stop")
	calls := 0
	if err := s.Artifacts(1, func(*artifact.Artifact) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("Artifacts: err %v after %d calls", err, calls)
	}
	calls = 0
	if err := s.Spans(1, func(artifact.Span) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("Spans: err %v after %d calls", err, calls)
	}
}

func TestWriteRejects(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	art := func(ws string, seq uint64, key string) *artifact.Artifact {
		return newArtifact(r, "t", ws, seq, key, []byte(`{"a":1}`))
	}
	a1, a2, b1 := art("a", 1, "k"), art("a", 2, ""), art("b", 3, "")
	good := func() []WorkspaceData {
		return []WorkspaceData{
			{Tenant: "t", Workspace: "a", Artifacts: []*artifact.Artifact{a1, a2}, Spans: spansFor(r, a1, 2)},
			{Tenant: "t", Workspace: "b", Artifacts: []*artifact.Artifact{b1}},
		}
	}
	clone := func(a *artifact.Artifact) *artifact.Artifact { c := *a; return &c }
	cases := []struct {
		name string
		mod  func(ws []WorkspaceData) []WorkspaceData
		want string
	}{
		{"unsorted artifacts", func(ws []WorkspaceData) []WorkspaceData {
			ws[0].Artifacts = []*artifact.Artifact{a2, a1}
			return ws
		}, "strictly ascending Seq"},
		{"duplicate seq", func(ws []WorkspaceData) []WorkspaceData {
			c := clone(a2)
			c.Seq = a1.Seq
			ws[0].Artifacts[1] = c
			return ws
		}, "strictly ascending Seq"},
		{"duplicate workspace", func(ws []WorkspaceData) []WorkspaceData {
			return append(ws, WorkspaceData{Tenant: "t", Workspace: "a"})
		}, "duplicate workspace"},
		{"span of another workspace", func(ws []WorkspaceData) []WorkspaceData {
			ws[1].Spans = spansFor(r, a1, 1)
			return ws
		}, "not in this workspace"},
		{"artifact of another workspace", func(ws []WorkspaceData) []WorkspaceData {
			ws[1].Artifacts = append(ws[1].Artifacts, art("a", 9, ""))
			return ws
		}, "belongs to workspace"},
		{"bad content hash", func(ws []WorkspaceData) []WorkspaceData {
			c := clone(b1)
			c.ContentHash[0] ^= 1
			ws[1].Artifacts[0] = c
			return ws
		}, "ContentHash"},
		{"duplicate idempotency key", func(ws []WorkspaceData) []WorkspaceData {
			c := clone(a2)
			c.IdempotencyKey = "k"
			ws[0].Artifacts[1] = c
			return ws
		}, "idempotency key"},
		{"duplicate artifact id", func(ws []WorkspaceData) []WorkspaceData {
			c := clone(b1)
			c.ID = a1.ID
			ws[1].Artifacts[0] = c
			return ws
		}, "duplicate artifact id"},
		{"span ordinal gap", func(ws []WorkspaceData) []WorkspaceData {
			ws[0].Spans[1].Ordinal = 2
			return ws
		}, "span ordinals"},
		{"duplicate span ordinal", func(ws []WorkspaceData) []WorkspaceData {
			ws[0].Spans[1].Ordinal = 0
			return ws
		}, "span ordinals"},
		{"start after end", func(ws []WorkspaceData) []WorkspaceData {
			ws[0].Spans[0].Start = ws[0].Spans[0].End + 1
			return ws
		}, "after end"},
		{"nil artifact", func(ws []WorkspaceData) []WorkspaceData {
			ws[1].Artifacts = append(ws[1].Artifacts, nil)
			return ws
		}, "nil"},
	}
	dir := t.TempDir()
	if _, err := Write(dir, 1, good()); err != nil {
		t.Fatalf("valid input rejected: %v", err)
	}
	os.Remove(filepath.Join(dir, FileName(1)))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Write(dir, 2, tc.mod(good()))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("failed Write left %v behind", entries)
			}
		})
	}
}

func TestWriteUnwritableDir(t *testing.T) {
	_, err := Write(filepath.Join(t.TempDir(), "missing"), 1, fixture(false))
	if err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
}

func TestConcurrentReadsAndClose(t *testing.T) {
	path, want := writeFixture(t, false)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				for ord, a := range want[1].Artifacts {
					got, err := s.Artifact(Ref{WS: 1, Ordinal: ord})
					if err != nil && !errors.Is(err, ErrClosed) {
						t.Error(err)
						return
					}
					if err == nil && got.ID != a.ID {
						t.Error("wrong artifact")
						return
					}
				}
			}
		}()
	}
	s.Close()
	wg.Wait()
}

func TestExtensionSections(t *testing.T) {
	dir := t.TempDir()
	a := &artifact.Artifact{ID: uuid.New(), Tenant: "t", Workspace: "w", Seq: 1, Type: "note", Payload: []byte(`"x"`)}
	a.ContentHash = artifact.ContentHash(a.Payload)
	post, vec := []byte("postings bytes"), bytes.Repeat([]byte{7}, 1000)
	ws := []WorkspaceData{{Tenant: "t", Workspace: "w", Artifacts: []*artifact.Artifact{a},
		Sections: []Section{{Kind: KindPostings, Data: post}, {Kind: KindVectors, Data: vec}}}}
	if _, err := Write(dir, 1, ws); err != nil {
		t.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, FileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Section(0, KindPostings); !ok || !bytes.Equal(got, post) {
		t.Fatalf("postings: %q %v", got, ok)
	}
	if got, ok := s.Section(0, KindVectors); !ok || !bytes.Equal(got, vec) {
		t.Fatal("vectors differ")
	}
	if _, ok := s.Section(0, KindTermDict); ok {
		t.Fatal("absent section found")
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, ok := s.Section(0, KindPostings); ok {
		t.Fatal("section readable after Close")
	}
	for _, bad := range [][]Section{{{Kind: KindSpans, Data: nil}}, {{Kind: KindPostings}, {Kind: KindPostings}}} {
		ws[0].Sections = bad
		if _, err := Write(dir, 2, ws); err == nil {
			t.Fatalf("Write accepted sections %v", bad)
		}
	}
}

func TestSpanByIndex(t *testing.T) {
	dir := t.TempDir()
	a := &artifact.Artifact{ID: uuid.New(), Tenant: "t", Workspace: "w", Seq: 1, Type: "note", Payload: []byte(`"x"`)}
	a.ContentHash = artifact.ContentHash(a.Payload)
	spans := []artifact.Span{
		{ID: uuid.New(), ArtifactID: a.ID, Ordinal: 0, Start: 0, End: 3, Tokens: 1, Text: "one"},
		{ID: uuid.New(), ArtifactID: a.ID, Ordinal: 1, Start: 4, End: 7, Tokens: 1, Text: "two"},
	}
	if _, err := Write(dir, 1, []WorkspaceData{{Tenant: "t", Workspace: "w", Artifacts: []*artifact.Artifact{a}, Spans: spans}}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(filepath.Join(dir, FileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, want := range spans {
		if id, ok := s.SpanID(0, i); !ok || id != want.ID {
			t.Fatalf("SpanID(%d) = %v %v", i, id, ok)
		}
		if id, art, ok := s.SpanIDs(0, i); !ok || id != want.ID || art != a.ID {
			t.Fatalf("SpanIDs(%d) = %v %v %v", i, id, art, ok)
		}
		if got, err := s.Span(0, i); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Span(%d) = %+v %v", i, got, err)
		}
	}
	if _, ok := s.SpanID(0, 2); ok {
		t.Fatal("SpanID out of range")
	}
	if _, err := s.Span(1, 0); err == nil {
		t.Fatal("Span of a missing workspace")
	}
}

// TestRawEntriesCopyVerbatim: a segment written from another's stored
// entries holds exactly the same artifacts, and passes Verify.
func TestRawEntriesCopyVerbatim(t *testing.T) {
	dir := t.TempDir()
	var arts []*artifact.Artifact
	var spans []artifact.Span
	for i := 0; i < 20; i++ {
		a := &artifact.Artifact{ID: uuid.New(), Tenant: "t", Workspace: "w", Seq: uint64(10 + i), Type: "note", ActorID: "x",
			Payload: []byte(fmt.Sprintf(`{"content":%q}`, strings.Repeat(fmt.Sprintf("text %d ", i), 1+i*10)))}
		if i%3 == 0 {
			a.IdempotencyKey = fmt.Sprint("k", i)
		}
		a.ContentHash = artifact.ContentHash(a.Payload)
		arts = append(arts, a)
		spans = append(spans, artifact.Span{ID: uuid.New(), ArtifactID: a.ID, Text: fmt.Sprint("span ", i)})
	}
	if _, err := Write(dir, 1, []WorkspaceData{{Tenant: "t", Workspace: "w", Artifacts: arts, Spans: spans}}); err != nil {
		t.Fatal(err)
	}
	src, err := Open(filepath.Join(dir, FileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	wd := WorkspaceData{Tenant: "t", Workspace: "w", Spans: spans}
	err = src.RawArtifacts(0, func(a *artifact.Artifact, entry []byte) error {
		wd.Artifacts, wd.Entries = append(wd.Artifacts, a), append(wd.Entries, entry)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, 2, []WorkspaceData{wd}); err != nil {
		t.Fatal(err)
	}
	dst, err := Open(filepath.Join(dir, FileName(2)))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := dst.Verify(); err != nil {
		t.Fatal(err)
	}
	var got []*artifact.Artifact
	dst.Artifacts(0, func(a *artifact.Artifact) error { got = append(got, a); return nil })
	if !reflect.DeepEqual(got, arts) {
		t.Fatal("copied artifacts differ")
	}
	if ref, ok := dst.FindIdempotencyKey(0, "k3"); !ok || ref.Ordinal != 3 {
		t.Fatal("idempotency key lost in the copy")
	}
	wd.Entries[0] = append([]byte(nil), wd.Entries[0]...)
	wd.Entries[0][len(wd.Entries[0])-1] ^= 1
	if _, err := Write(dir, 3, []WorkspaceData{wd}); err == nil {
		t.Fatal("a damaged entry was accepted")
	}
}
