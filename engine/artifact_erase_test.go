package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

const eraseNeedle = "zebracorn7731"

// eraseFixture ingests five artifacts into t1/w (the third holds the needle)
// and one into t2/w, and returns the ids of t1's in ingest order.
func eraseFixture(t *testing.T, db *DB) []uuid.UUID {
	t.Helper()
	texts := []string{
		"The deploy window is Tuesday at 14:00 UTC for the payments service.",
		"Budget for project Atlas is 42000 dollars this quarter.",
		"The secret launch code word is " + eraseNeedle + " and must never leak.",
		"The deploy of the search service moved to Thursday.",
		"Alice owns the payments runbook and the deploy checklist.",
	}
	var ids []uuid.UUID
	for i, txt := range texts {
		in := chat("w", txt)
		in.Timestamp = in.Timestamp.Add(time.Duration(i%3) * time.Minute) // ties on purpose
		in.SessionID = fmt.Sprintf("s%d", i%2)
		if i == 2 {
			in.IdempotencyKey = "k-secret"
		}
		ids = append(ids, mustIngest(t, db, "t1", in).ArtifactID)
	}
	mustIngest(t, db, "t2", chat("w", "Tenant two also talks about the deploy window."))
	return ids
}

// packJSON returns a pack's full result and receipt id as JSON.
func packJSON(t *testing.T, db *DB, query string) string {
	t.Helper()
	pr := mustPack(t, db, "t1", PackProbe{Workspace: "w", Query: query, MaxTokens: 2000})
	b, err := json.Marshal(struct {
		R  json.RawMessage
		ID uuid.UUID
	}{pr.JSON, pr.ReceiptID})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func listIDs(t *testing.T, db *DB, tenant string, q ListQuery) []uuid.UUID {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 100
	}
	page, err := db.ListArtifacts(tenant, "w", q)
	if err != nil {
		t.Fatal(err)
	}
	var out []uuid.UUID
	for _, a := range page.Artifacts {
		out = append(out, a.ID)
	}
	return out
}

func TestEraseArtifact(t *testing.T) {
	for _, c := range []struct {
		name       string
		flushFirst bool // the artifact is in a segment when erased
		restart    bool // reopen after the erasure (WAL replay of the record)
	}{
		{"head", false, false},
		{"head+restart", false, true},
		{"segment", true, false},
		{"segment+restart", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openTest(t, dir, Options{DisableBackground: true})
			defer func() { db.Close() }()
			ids := eraseFixture(t, db)
			secret := ids[2]
			if c.flushFirst {
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			before := db.DataVersion("t1", "w")
			if hits, _ := db.SearchLexical("t1", "w", eraseNeedle, 10); len(hits) != 1 {
				t.Fatalf("before erasure: %d hits for the needle", len(hits))
			}
			if _, err := db.EraseArtifact("t2", secret); !errors.Is(err, ErrNotFound) {
				t.Fatalf("another tenant's erase: %v, want ErrNotFound", err)
			}
			res, err := db.EraseArtifact("t1", secret)
			if err != nil || res.Workspace != "w" || res.Spans != 1 {
				t.Fatalf("erase: %+v %v", res, err)
			}
			if c.restart {
				db.Close()
				db = openTest(t, dir, Options{DisableBackground: true})
			}
			after := db.DataVersion("t1", "w")
			if after <= before {
				t.Fatalf("data version %d -> %d: did not move", before, after)
			}
			checkErased(t, db, ids, secret)
			if _, err := db.EraseArtifact("t1", secret); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second erase: %v, want ErrNotFound", err)
			}
			if v := db.DataVersion("t1", "w"); v != after {
				t.Fatalf("a refused erase moved the data version %d -> %d", after, v)
			}

			// The same pack before compaction, after it and after a restart.
			want := packJSON(t, db, "when is the deploy window")
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			if got := packJSON(t, db, "when is the deploy window"); got != want {
				t.Fatalf("pack changed with compaction:\n%s\n%s", want, got)
			}
			db.Close()
			assertNotOnDisk(t, dir, eraseNeedle)
			db = openTest(t, dir, Options{DisableBackground: true})
			if got := packJSON(t, db, "when is the deploy window"); got != want {
				t.Fatalf("pack changed with restart:\n%s\n%s", want, got)
			}
			checkErased(t, db, ids, secret)

			// The idempotency key is free again.
			in := chat("w", "A new artifact under the old key.")
			in.IdempotencyKey = "k-secret"
			if r := mustIngest(t, db, "t1", in); r.Replayed || r.ArtifactID == secret {
				t.Fatalf("the erased artifact's key still answers: %+v", r)
			}
		})
	}
}

// checkErased checks that secret is unreadable everywhere and the rest is not.
func checkErased(t *testing.T, db *DB, ids []uuid.UUID, secret uuid.UUID) {
	t.Helper()
	if _, err := db.Artifact("t1", secret); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Artifact: %v", err)
	}
	if _, err := db.ArtifactSpans("t1", secret); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ArtifactSpans: %v", err)
	}
	if id, ok, _ := db.ArtifactByIdempotencyKey("t1", "w", "k-secret"); ok && id == secret {
		t.Fatal("idempotency key still finds the erased artifact")
	}
	if hits, _ := db.SearchLexical("t1", "w", eraseNeedle, 10); len(hits) != 0 {
		t.Fatalf("needle still searchable: %v", hits)
	}
	pr := mustPack(t, db, "t1", PackProbe{Workspace: "w", Query: "secret launch code word", MaxTokens: 2000})
	for _, cit := range pr.Citations {
		if cit.ArtifactID == secret {
			t.Fatal("pack cites the erased artifact")
		}
	}
	for _, ex := range pr.Exclusions {
		if ex.ArtifactID == secret {
			t.Fatal("pack excludes (so saw) the erased artifact")
		}
	}
	listed := listIDs(t, db, "t1", ListQuery{})
	if slices.Contains(listed, secret) || len(listed) < len(ids)-1 {
		t.Fatalf("listing %v (erased %s)", listed, secret)
	}
	ws, err := db.Workspaces("t1")
	if err != nil || len(ws) != 1 || ws[0].Workspace != "w" || ws[0].Artifacts != len(listed) {
		t.Fatalf("workspaces %+v %v (listed %d)", ws, err, len(listed))
	}
}

// TestEraseArtifactSearchStatistics: BM25 scores after an erasure are those
// of a directory that never held the artifact, whatever the layout.
func TestEraseArtifactSearchStatistics(t *testing.T) {
	scores := func(db *DB) []float64 {
		hits, err := db.SearchLexical("t1", "w", "deploy window payments", 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		for _, h := range hits {
			out = append(out, h.Score)
		}
		return out
	}
	fresh := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer fresh.Close()
	ids := eraseFixture(t, fresh)
	for _, id := range []uuid.UUID{ids[1], ids[2]} {
		if _, err := fresh.EraseArtifact("t1", id); err != nil {
			t.Fatal(err)
		}
	}
	if err := fresh.Compact(); err != nil { // the reference: nothing erased left anywhere
		t.Fatal(err)
	}
	want := scores(fresh)
	for _, layout := range []string{"head", "segment", "split"} {
		db := openTest(t, t.TempDir(), Options{DisableBackground: true})
		ids := eraseFixture(t, db)
		switch layout {
		case "segment":
			db.Flush()
		case "split": // erase one in a segment, one in the head
			db.Flush()
			db.Ingest("t1", chat("other", "unrelated"))
		}
		db.EraseArtifact("t1", ids[1])
		if layout == "split" {
			db.Flush()
		}
		db.EraseArtifact("t1", ids[2])
		if got := scores(db); !slices.Equal(got, want) {
			t.Errorf("%s: scores %v, want %v", layout, got, want)
		}
		db.Close()
	}
}

func TestListArtifactsOrderAndPaging(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	ids := eraseFixture(t, db)
	// Times: ids[0] +0, [1] +1, [2] +2, [3] +0, [4] +1 minutes. Newest
	// first, ties by later ingest first.
	want := []uuid.UUID{ids[2], ids[4], ids[1], ids[3], ids[0]}
	check := func(label string) {
		t.Helper()
		if got := listIDs(t, db, "t1", ListQuery{}); !slices.Equal(got, want) {
			t.Fatalf("%s: order %v, want %v", label, got, want)
		}
		// Paged two at a time gives the same sequence.
		var paged []uuid.UUID
		q := ListQuery{Limit: 2}
		for {
			page, err := db.ListArtifacts("t1", "w", q)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range page.Artifacts {
				paged = append(paged, a.ID)
			}
			if !page.More {
				break
			}
			q.After, q.HasAfter = Position(page.Artifacts[len(page.Artifacts)-1]), true
		}
		if !slices.Equal(paged, want) {
			t.Fatalf("%s: paged %v, want %v", label, paged, want)
		}
	}
	check("head")
	db.Flush()
	check("segment")
	db.Compact()
	check("compacted")

	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		q    ListQuery
		want []uuid.UUID
	}{
		{"session", ListQuery{SessionID: "s0"}, []uuid.UUID{ids[2], ids[4], ids[0]}},
		{"actor none", ListQuery{ActorID: "bob"}, nil},
		{"actor", ListQuery{ActorID: "alice", Type: "chat_turn"}, want},
		{"type none", ListQuery{Type: "note"}, nil},
		{"since", ListQuery{Since: base.Add(time.Minute).UnixMicro(), HasSince: true}, []uuid.UUID{ids[2], ids[4], ids[1]}},
		{"until", ListQuery{Until: base.Add(time.Minute).UnixMicro(), HasUntil: true}, []uuid.UUID{ids[4], ids[1], ids[3], ids[0]}},
		{"other tenant", ListQuery{}, nil},
	} {
		tenant := "t1"
		if c.name == "other tenant" {
			tenant = "t3"
		}
		if got := listIDs(t, db, tenant, c.q); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestEraseArtifactBackgroundEmbedding: an artifact erased while it waits
// for the background embedder is dropped from the queue, and flushes go on.
func TestEraseArtifactBackgroundEmbedding(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true, EmbedInBackground: true})
	defer db.Close()
	ids := eraseFixture(t, db)
	if _, err := db.EraseArtifact("t1", ids[2]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- db.Flush() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("flush waits for an erased artifact's embedding")
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	checkErased(t, db, ids, ids[2])
}
