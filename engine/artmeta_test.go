package engine

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/engine/artmeta"
	"github.com/loci-memory/loci/engine/manifest"
	"github.com/loci-memory/loci/segment"
)

// checkMeta checks every live segment's ARTIFACT_META rows against the
// artifacts' entries (payload aside), and that a pack resolves metadata
// through them.
func checkMeta(t *testing.T, db *DB, wantArtifacts int) {
	t.Helper()
	db.mu.RLock()
	defer db.mu.RUnlock()
	n := 0
	for _, ls := range db.segments {
		for wi, w := range ls.Workspaces() {
			sec, ok := ls.Section(wi, segment.KindArtifactMeta)
			if !ok {
				t.Fatalf("segment %s workspace %q has no ARTIFACT_META", ls.Path(), w.Workspace)
			}
			err := ls.Artifacts(wi, func(a *artifact.Artifact) error {
				ref, ok := ls.FindArtifact(a.ID)
				if !ok {
					return fmt.Errorf("artifact %s not found", a.ID)
				}
				row, err := artmeta.RowAt(sec, w.Artifacts, ref.Ordinal)
				if err != nil {
					return err
				}
				m, err := artmeta.DecodeRow(row, a.ID, a.Seq)
				if err != nil {
					return err
				}
				full := *a
				full.Payload = nil
				if !reflect.DeepEqual(*m, full) {
					return fmt.Errorf("row %+v, entry %+v", *m, full)
				}
				got, err := ls.artifactMeta(a.ID, ref)
				if err != nil || !reflect.DeepEqual(*got, full) {
					return fmt.Errorf("artifactMeta %+v (%v), want %+v", got, err, full)
				}
				n++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if n != wantArtifacts {
		t.Fatalf("%d artifacts in segments, want %d", n, wantArtifacts)
	}
}

func TestArtifactMetaSection(t *testing.T) {
	db := openControl(t, t.TempDir(), &logControl{})
	defer db.Close()
	ingest := func(ws string, n int) {
		for i := 0; i < n; i++ {
			_, err := db.Ingest("t", IngestInput{Workspace: ws, ActorID: "a", Type: "note", SessionID: "s1", IdempotencyKey: fmt.Sprintf("%s-%d", ws, i),
				Payload:     []byte(fmt.Sprintf(`{"content":"note %d of %s"}`, i, ws)),
				Permissions: artifact.Permissions{Visibility: "restricted", AllowedActors: []string{"a", "b"}, RBACTags: []string{"x"}},
				Timestamp:   time.Unix(1_700_000_000+int64(i), 0)})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	ingest("w1", 3)
	ingest("w2", 2)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	checkMeta(t, db, 5)
	ingest("w1", 2) // replays of w1-0, w1-1: nothing new
	ingest("w3", 4)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EraseWorkspace("t", "w2"); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	checkMeta(t, db, 7) // w2 purged
}

// A segment written before ARTIFACT_META existed is read through its
// entries, and compaction gives its workspaces the section.
func TestArtifactMetaFromOlderSegments(t *testing.T) {
	dir := t.TempDir()
	db := openControl(t, dir, &logControl{})
	defer db.Close()
	for i := 0; i < 4; i++ {
		if _, err := db.Ingest("t", IngestInput{Workspace: "w", ActorID: "a", Type: "chat_turn", SessionID: "s",
			Payload: []byte(fmt.Sprintf(`{"role":"user","content":"turn %d"}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	db.mu.Lock()
	data, err := db.head.segmentData(db.hidden)
	db.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for i := range data { // as an older writer wrote it
		var kept []segment.Section
		for _, s := range data[i].Sections {
			if s.Kind != segment.KindArtifactMeta {
				kept = append(kept, s)
			}
		}
		data[i].Sections = kept
	}
	if _, err := segment.Write(filepath.Join(dir, segmentDir), 999, data); err != nil {
		t.Fatal(err)
	}
	old, err := openLiveSegment(filepath.Join(dir, segmentDir, segment.FileName(999)), manifest.Segment{ID: 999}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, ok := old.Section(0, segment.KindArtifactMeta); ok {
		t.Fatal("the older segment has ARTIFACT_META")
	}
	merged, err := db.mergeData([]*liveSegment{old}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sec []byte
	for _, s := range merged[0].Sections {
		if s.Kind == segment.KindArtifactMeta {
			sec = s.Data
		}
	}
	if sec == nil {
		t.Fatal("compaction gave no ARTIFACT_META")
	}
	for ord, a := range data[0].Artifacts {
		row, err := artmeta.RowAt(sec, len(data[0].Artifacts), ord)
		if err != nil {
			t.Fatal(err)
		}
		m, err := artmeta.DecodeRow(row, a.ID, a.Seq)
		if err != nil {
			t.Fatal(err)
		}
		full := *a
		full.Payload = nil
		if !reflect.DeepEqual(*m, full) {
			t.Fatalf("row %d: %+v, want %+v", ord, *m, full)
		}
		// Reading metadata from the older segment works through its entry.
		ref, _ := old.FindArtifact(a.ID)
		got, err := old.artifactMeta(a.ID, ref)
		if err != nil || !reflect.DeepEqual(*got, full) {
			t.Fatalf("older segment metadata %+v (%v)", got, err)
		}
	}
}
