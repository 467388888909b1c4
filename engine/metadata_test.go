package engine

import (
	"errors"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/backup"
)

// metaFixture ingests four artifacts of t1/w, three with metadata, and one
// of t2/w with the same metadata; it returns t1's ids and metadata.
func metaFixture(t *testing.T, db *DB) ([]uuid.UUID, []map[string]string) {
	t.Helper()
	texts := []string{
		"The deploy window for payments is Tuesday at 14:00 UTC.",
		"The deploy window for search is Thursday at 09:00 UTC.",
		"The deploy window for billing is Friday at noon.",
		"The deploy window for the wiki is whenever.",
	}
	mds := []map[string]string{
		{"team": "payments", "env": "prod"},
		{"team": "search", "env": "prod"},
		{"team": "payments", "env": "staging", "note": "ünïcode ok"},
		nil,
	}
	var ids []uuid.UUID
	for i, txt := range texts {
		in := chat("w", txt)
		in.Metadata = mds[i]
		ids = append(ids, mustIngest(t, db, "t1", in).ArtifactID)
	}
	other := chat("w", "Tenant two: the deploy window for payments is Monday.")
	other.Metadata = map[string]string{"team": "payments", "env": "prod"}
	mustIngest(t, db, "t2", other)
	return ids, mds
}

func checkMetadata(t *testing.T, stage string, db *DB, ids []uuid.UUID, mds []map[string]string) {
	t.Helper()
	for i, id := range ids {
		a, err := db.Artifact("t1", id)
		if err != nil {
			t.Fatalf("%s: artifact %d: %v", stage, i, err)
		}
		if !reflect.DeepEqual(a.Metadata, mds[i]) {
			t.Fatalf("%s: artifact %d metadata %v, want %v", stage, i, a.Metadata, mds[i])
		}
	}
	page, err := db.ListArtifacts("t1", "w", ListQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Artifacts) != len(ids) {
		t.Fatalf("%s: listing has %d artifacts, want %d", stage, len(page.Artifacts), len(ids))
	}
	for _, a := range page.Artifacts {
		i := indexOf(ids, a.ID)
		if i < 0 || !reflect.DeepEqual(a.Metadata, mds[i]) {
			t.Fatalf("%s: listed artifact %s metadata %v", stage, a.ID, a.Metadata)
		}
	}
}

func indexOf(ids []uuid.UUID, id uuid.UUID) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// filteredPack packs with a metadata filter and returns the artifacts cited
// or excluded (every candidate the packer saw) and the pack as JSON.
func filteredPack(t *testing.T, db *DB, filter map[string]string) (map[uuid.UUID]bool, string, uuid.UUID) {
	t.Helper()
	pr := mustPack(t, db, "t1", PackProbe{Workspace: "w", Query: "when is the deploy window", MaxTokens: 2000, Metadata: filter})
	seen := map[uuid.UUID]bool{}
	for _, c := range pr.Citations {
		seen[c.ArtifactID] = true
	}
	for _, e := range pr.Exclusions {
		seen[e.ArtifactID] = true
	}
	return seen, packJSONOf(t, pr), pr.ReceiptID
}

func packJSONOf(t *testing.T, pr *PackOutcome) string {
	t.Helper()
	var b strings.Builder
	for _, c := range pr.Citations {
		b.WriteString(c.SpanID.String() + c.ContentHash + "\n")
	}
	b.WriteString(pr.ContextText + pr.ReceiptID.String())
	return b.String()
}

// Metadata is stored durably and read back unchanged from the head, a
// segment, a compacted segment, after WAL replay and from a backup.
func TestMetadataDurable(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	defer func() { db.Close() }()
	ids, mds := metaFixture(t, db)
	checkMetadata(t, "head", db, ids, mds)
	filter := map[string]string{"team": "payments"}
	_, want, _ := filteredPack(t, db, filter)

	db.Close()
	db = openTest(t, dir, Options{DisableBackground: true})
	checkMetadata(t, "WAL replay", db, ids, mds)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	checkMetadata(t, "segment", db, ids, mds)
	more := chat("w", "Unrelated: lunch is at noon.")
	more.Metadata = map[string]string{"team": "food"}
	extra := mustIngest(t, db, "t1", more).ArtifactID
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EraseArtifact("t1", extra); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	checkMetadata(t, "compacted", db, ids, mds)
	db.Close()
	if r, err := Verify(dir); err != nil || len(r.Faults) > 0 {
		t.Fatalf("verify: %v %v", r, err)
	}
	db = openTest(t, dir, Options{DisableBackground: true})
	checkMetadata(t, "compacted+restart", db, ids, mds)
	_, got, _ := filteredPack(t, db, filter)
	// The data version moved (an ingest and an erasure), so only the
	// citations must match, not the receipt id.
	if cut := func(s string) string { return s[:strings.LastIndex(s, "=== END CONTEXT ===")] }; cut(got) != cut(want) {
		t.Fatalf("filtered pack changed with layout:\n%s\n%s", want, got)
	}

	bdir := filepath.Join(t.TempDir(), "backup")
	if _, err := backup.Take(dir, bdir, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if err := backup.Restore(bdir, restored); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(restored); err != nil {
		t.Fatal(err)
	}
	r := openTest(t, restored, Options{DisableBackground: true})
	defer r.Close()
	checkMetadata(t, "backup", r, ids, mds)
}

func TestMetadataExportImport(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	ids, mds := metaFixture(t, db)
	var items []ImportItem
	_, err := db.ExportWorkspace("t1", "w", func(WorkspaceExport) error { return nil }, func(it ExportItem) error {
		if it.Artifact != nil {
			a := *it.Artifact
			items = append(items, ImportItem{Artifact: &a, SpanIDs: it.SpanIDs})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	to := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer to.Close()
	if err := to.Import("t1", "w", items); err != nil {
		t.Fatal(err)
	}
	checkMetadata(t, "imported", to, ids, mds)
}

func TestMetadataValidation(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	many := map[string]string{}
	for i := range MaxMetadataKeys + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	big := map[string]string{}
	for i := range 9 {
		big[string(rune('a'+i))] = strings.Repeat("x", 1000)
	}
	for _, c := range []struct {
		md    map[string]string
		field string
	}{
		{many, "Metadata"},
		{map[string]string{"": "v"}, "Metadata"},
		{map[string]string{strings.Repeat("k", 65): "v"}, "Metadata"},
		{map[string]string{"bad key": "v"}, "Metadata"},
		{map[string]string{"k": strings.Repeat("v", 1025)}, "Metadata.k"},
		{map[string]string{"k": "a\nb"}, "Metadata.k"},
		{map[string]string{"k": "\xff"}, "Metadata.k"},
		{big, "Metadata"},
	} {
		in := chat("w", "hello")
		in.Metadata = c.md
		_, err := db.Ingest("t1", in)
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != c.field {
			t.Errorf("metadata %.60v: err %v, want an InvalidError of %s", c.md, err, c.field)
		}
		if _, err := db.IngestBatch("t1", []IngestInput{chat("w", "ok"), in}); !errors.As(err, &inv) || inv.Field != c.field || !strings.Contains(err.Error(), "item 1") {
			t.Errorf("batch: err %v, want item 1's %s", err, c.field)
		}
	}
	ok := map[string]string{"A-z_0.9:x": "", strings.Repeat("k", 64): strings.Repeat("v", 1024)}
	in := chat("w", "hello")
	in.Metadata = ok
	if _, err := db.Ingest("t1", in); err != nil {
		t.Fatalf("metadata at the bounds: %v", err)
	}
}

func TestMetadataIdempotency(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	in := chat("w", "hello")
	in.IdempotencyKey = "k"
	in.Metadata = map[string]string{"a": "1", "b": "2"}
	first := mustIngest(t, db, "t1", in)
	in.Metadata = map[string]string{"b": "2", "a": "1"}
	if r := mustIngest(t, db, "t1", in); !r.Replayed || r.ArtifactID != first.ArtifactID {
		t.Fatalf("same metadata: %+v", r)
	}
	for _, md := range []map[string]string{nil, {"a": "1"}, {"a": "1", "b": "3"}} {
		in.Metadata = md
		var conflict *IdempotencyConflictError
		if _, err := db.Ingest("t1", in); !errors.As(err, &conflict) || !reflect.DeepEqual(conflict.Differs, []string{"Metadata"}) {
			t.Fatalf("metadata %v: err %v, want a conflict in metadata", md, err)
		}
	}
	// Metadata is not part of the content hash.
	a, _ := db.Artifact("t1", first.ArtifactID)
	if a.ContentHash != artifact.ContentHash(in.Payload) {
		t.Fatal("content hash depends on metadata")
	}
	// The stored map is the engine's own copy.
	md := map[string]string{"x": "1"}
	in2 := chat("w", "copy")
	in2.Metadata = md
	r := mustIngest(t, db, "t1", in2)
	md["x"] = "2"
	if a, _ := db.Artifact("t1", r.ArtifactID); a.Metadata["x"] != "1" {
		t.Fatal("the engine aliases the caller's metadata map")
	}
}

func TestPackMetadataFilter(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	ids, _ := metaFixture(t, db)
	for _, c := range []struct {
		filter map[string]string
		want   []int
	}{
		{nil, []int{0, 1, 2, 3}},
		{map[string]string{"team": "payments"}, []int{0, 2}},
		{map[string]string{"team": "payments", "env": "prod"}, []int{0}},
		{map[string]string{"env": "prod"}, []int{0, 1}},
		{map[string]string{"team": "Payments"}, nil},
		{map[string]string{"team": "payments", "missing": ""}, nil},
	} {
		seen, _, _ := filteredPack(t, db, c.filter)
		want := map[uuid.UUID]bool{}
		for _, i := range c.want {
			want[ids[i]] = true
		}
		if !maps.Equal(seen, want) {
			t.Errorf("filter %v: artifacts %v, want %v", c.filter, seen, want)
		}
	}
	// Key order does not matter; a filter changes the receipt id.
	_, a, ra := filteredPack(t, db, map[string]string{"team": "payments", "env": "prod"})
	_, b, rb := filteredPack(t, db, map[string]string{"env": "prod", "team": "payments"})
	if a != b || ra != rb {
		t.Fatal("filter key order changes the pack")
	}
	_, _, none := filteredPack(t, db, nil)
	_, _, empty := filteredPack(t, db, map[string]string{})
	if none != empty || none == ra {
		t.Fatal("receipt ids: an empty filter must equal none, a filter must differ")
	}
	// Pinned spans outside the filter stay out.
	spans, _ := db.ArtifactSpans("t1", ids[1])
	if _, err := db.Feedback("t1", FeedbackInput{Workspace: "w", ActorID: "alice", Action: "pin", ArtifactID: ids[1], SpanID: spans[0].ID}); err != nil {
		t.Fatal(err)
	}
	if seen, _, _ := filteredPack(t, db, map[string]string{"team": "payments"}); seen[ids[1]] {
		t.Fatal("a pinned span outside the filter reached the pack")
	}
	if _, err := probePack(t.Context(), db, "t1", PackProbe{Workspace: "w", Query: "q", Metadata: map[string]string{"bad key": "x"}}); err == nil {
		t.Fatal("a bad filter key was accepted")
	}
}
