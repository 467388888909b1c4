package retrieval

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/pack"
)

// TestReceiptPreviewsRebuilt checks that receipts are stored without their
// citations' content previews and served with them, byte-identical, from
// the head, from segments, after compaction and after restarts; and that
// erasing a cited artifact empties its citations' previews only.
func TestReceiptPreviewsRebuilt(t *testing.T) {
	dir := t.TempDir()
	opts := engine.Options{DisableBackground: true, NoEmbedder: true}
	db := enginetest.Open(t, dir, opts)
	texts := []string{
		"The <b>quarterly</b> report & the \"budget\" review were moved to Friday.",
		strings.Repeat("Ünïcode quarterly budget notes with émoji 🚀 and more words; ", 8),
		"Budget meeting: the quarterly numbers need a review before \u2028 the board.",
	}
	for _, tx := range texts {
		if _, err := db.Ingest("t", enginetest.Chat("ws", tx)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := New(db).ContextPack(t.Context(), "t", PackRequest{Workspace: "ws", Query: "quarterly budget review"})
	if err != nil || len(res.Result.Citations) < 2 {
		t.Fatalf("pack: %v", err)
	}
	served := func(db *engine.DB) ([]byte, engine.Receipt) {
		t.Helper()
		r, err := db.GetReceipt("t", res.ReceiptID)
		if err != nil {
			t.Fatal(err)
		}
		body, err := ReceiptBody(db, r)
		if err != nil {
			t.Fatal(err)
		}
		return body, r
	}
	first, stored := served(db)
	var got struct {
		Evidence []struct {
			ContentPreview string `json:"content_preview"`
		} `json:"evidence"`
	}
	if err := json.Unmarshal(first, &got); err != nil || len(got.Evidence) != len(res.Result.Citations) {
		t.Fatalf("served body: %v, %d citations", err, len(got.Evidence))
	}
	for i, c := range res.Result.Citations {
		if got.Evidence[i].ContentPreview != c.ContentPreview || c.ContentPreview == "" {
			t.Fatalf("citation %d: served preview %q, pack's %q", i, got.Evidence[i].ContentPreview, c.ContentPreview)
		}
	}
	if len(stored.Cuts) != len(res.Result.Citations) || bytes.Contains(stored.Body, []byte("quarterly</b>")) || bytes.Contains(stored.Body, []byte(`\u003cb\u003equarterly`)) {
		t.Fatalf("stored body keeps previews (%d cuts): %s", len(stored.Cuts), stored.Body)
	}
	same := func(when string) {
		t.Helper()
		if body, _ := served(db); !bytes.Equal(body, first) {
			t.Fatalf("%s: receipt differs:\n%s\n%s", when, body, first)
		}
	}
	db.Flush()
	same("segment")
	db.Close()
	db = enginetest.Open(t, dir, opts)
	same("restart")
	db.Ingest("t", enginetest.Chat("ws", "another quarterly note"))
	db.Flush()
	db.Compact()
	same("compaction")
	db.Close()
	db = enginetest.Open(t, dir, opts)
	same("restart after compaction")

	erased := res.Result.Citations[0].ArtifactID
	if _, err := db.EraseArtifact("t", erased); err != nil {
		t.Fatal(err)
	}
	// Served after the erasure: the first body with the erased artifact's
	// previews empty, and nothing else changed.
	body, _ := served(db)
	var before, after map[string]any
	if json.Unmarshal(first, &before) != nil || json.Unmarshal(body, &after) != nil {
		t.Fatalf("bodies: %s\n%s", first, body)
	}
	emptied := 0
	for i, c := range res.Result.Citations {
		if c.ArtifactID == erased {
			before["evidence"].([]any)[i].(map[string]any)["content_preview"] = ""
			emptied++
		}
	}
	b1, _ := json.Marshal(before)
	b2, _ := json.Marshal(after)
	if emptied == 0 || !bytes.Equal(b1, b2) {
		t.Fatalf("after erasure:\n%s\nwant\n%s", b2, b1)
	}
	db.Close()
}

// TestStripPreviewsFallback keeps a body whole when a preview cannot be
// found exactly or is not the start of its span's text.
func TestStripPreviewsFallback(t *testing.T) {
	body := []byte(`{"query":"q","evidence":[{"span_id":"s","content_preview":"abc","pinned":false}],"exclusions":[]}`)
	tests := []struct {
		name  string
		cites []pack.Citation
		cuts  int
	}{
		{"stripped", []pack.Citation{{ContentPreview: "abc", Text: "abcdef"}}, 1},
		{"no citations", nil, 0},
		{"not a prefix of the text", []pack.Citation{{ContentPreview: "abc", Text: "xabc"}}, 0},
		{"not in the body", []pack.Citation{{ContentPreview: "abd", Text: "abd"}}, 0},
		{"more citations than previews", []pack.Citation{{ContentPreview: "abc", Text: "abc"}, {ContentPreview: "abc", Text: "abc"}}, 0},
	}
	for _, tt := range tests {
		out, cuts := stripPreviews(body, tt.cites)
		if len(cuts) != tt.cuts || tt.cuts == 0 && !bytes.Equal(out, body) {
			t.Errorf("%s: %d cuts, %s", tt.name, len(cuts), out)
		}
		if tt.cuts == 1 && string(out) != `{"query":"q","evidence":[{"span_id":"s","content_preview":"","pinned":false}],"exclusions":[]}` {
			t.Errorf("%s: %s", tt.name, out)
		}
	}
}
