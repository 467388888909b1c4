package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/pack"
)

func TestReceipts(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	mk := func(i int, hash string) Receipt {
		return Receipt{ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint("r", i))), Tenant: "t", Workspace: "ws",
			Query: fmt.Sprint("query ", i), ActorID: "a", PackHash: hash, Timestamp: int64(1000 + i), Confidence: 0.5,
			Abstain: i%2 == 0, TotalTokens: 100 + i, Body: []byte(fmt.Sprintf(`{"receipt":%d}`, i))}
	}
	var ids []uuid.UUID
	for i := 0; i < 7; i++ {
		h := "sha256:aa"
		if i%3 == 0 {
			h = "sha256:bb"
		}
		r := mk(i, h)
		if err := db.StoreReceipt(r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		if i == 3 {
			db.Flush()
		}
	}
	v := db.DataVersion("t", "ws")
	// Storing the same id again keeps the first.
	dup := mk(0, "sha256:bb")
	dup.Body = []byte(`{"changed":true}`)
	db.StoreReceipt(dup)
	check := func(when string) {
		t.Helper()
		r, err := db.GetReceipt("t", ids[0])
		if err != nil || string(r.Body) != `{"receipt":0}` || r.Query != "query 0" || !r.Abstain || r.TotalTokens != 100 {
			t.Fatalf("%s: get: %+v %v", when, r, err)
		}
		if _, err := db.GetReceipt("other", ids[0]); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: another tenant's receipt: %v", when, err)
		}
		page, _ := db.ListReceipts("t", "ws", "", 1, 3)
		if page.Total != 7 || len(page.Receipts) != 3 || page.Receipts[0].ID != ids[5] || page.Receipts[2].ID != ids[3] || page.Receipts[0].Body != nil {
			t.Fatalf("%s: page %+v", when, page)
		}
		page, _ = db.ListReceipts("t", "ws", "sha256:bb", 0, 50)
		if page.Total != 3 || page.Receipts[0].ID != ids[6] || page.Receipts[2].ID != ids[0] {
			t.Fatalf("%s: filtered page %+v", when, page)
		}
	}
	check("head and segment")
	if db.DataVersion("t", "ws") != v {
		t.Fatal("a receipt changed the data version")
	}
	db.Close()
	db = openTest(t, dir, Options{DisableBackground: true})
	check("restart")
	db.Flush()
	db.Compact()
	check("compaction")
	db.Close()
	db = openTest(t, dir, Options{DisableBackground: true})
	check("restart after compaction")
	db.EraseWorkspace("t", "ws")
	if _, err := db.GetReceipt("t", ids[0]); !errors.Is(err, ErrNotFound) {
		t.Fatal("erased receipt readable")
	}
	db.Compact()
	db.Close()
	assertNotOnDisk(t, dir, "query 3")
	rep, err := Verify(dir)
	if err != nil || len(rep.Faults) != 0 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// TestReceiptRetention keeps each workspace's newest receipts only: older
// ones are not served, whether they were in the head or in segments, the
// same ones are kept after a restart, and compaction removes their bytes.
func TestReceiptRetention(t *testing.T) {
	dir := t.TempDir()
	opts := Options{DisableBackground: true, ReceiptsPerWorkspace: 5}
	db := openTest(t, dir, opts)
	mk := func(ws string, i int) Receipt {
		return Receipt{ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint(ws, i))), Tenant: "t", Workspace: ws,
			Query: fmt.Sprintf("qry-%s-%02d", ws, i), PackHash: "sha256:aa", Timestamp: int64(i), Body: []byte(fmt.Sprintf(`{"receipt":"%s-%d"}`, ws, i))}
	}
	var ids []uuid.UUID
	for i := range 12 {
		r := mk("ws", i)
		ids = append(ids, r.ID)
		if err := db.StoreReceipt(r); err != nil {
			t.Fatal(err)
		}
		if i == 3 || i == 8 {
			db.Flush()
		}
	}
	for i := range 3 {
		db.StoreReceipt(mk("other", i))
	}
	check := func(when string) {
		t.Helper()
		page, err := db.ListReceipts("t", "ws", "", 0, 50)
		if err != nil || page.Total != 5 || page.Receipts[0].ID != ids[11] || page.Receipts[4].ID != ids[7] {
			t.Fatalf("%s: page %+v %v", when, page, err)
		}
		for i, id := range ids {
			r, err := db.GetReceipt("t", id)
			if kept := i >= 7; kept != (err == nil) || kept && string(r.Body) != fmt.Sprintf(`{"receipt":"ws-%d"}`, i) {
				t.Fatalf("%s: receipt %d: %q, %v", when, i, r.Body, err)
			}
		}
		if page, _ := db.ListReceipts("t", "other", "", 0, 50); page.Total != 3 {
			t.Fatalf("%s: another workspace's receipts: %d", when, page.Total)
		}
	}
	check("live")
	db.Close()
	db = openTest(t, dir, opts)
	check("restart")
	db.Flush()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	check("compaction")
	db.Close()
	for i := range 7 {
		assertNotOnDisk(t, dir, fmt.Sprintf("qry-ws-%02d", i))
	}
	db = openTest(t, dir, opts)
	check("restart after compaction")
	db.Close()
	if rep, err := Verify(dir); err != nil || len(rep.Faults) != 0 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// TestReceiptsFillTheHead checks that receipts alone, with no ingest, fill
// the head and trigger flushes: memory stays near the flush threshold.
func TestReceiptsFillTheHead(t *testing.T) {
	const threshold = 256 << 10
	db := openTest(t, t.TempDir(), Options{FlushThreshold: threshold})
	body := bytes.Repeat([]byte(`{"span_id":"x","reason":"LOW_RELEVANCE"},`), 200)
	for i := range 400 {
		r := Receipt{ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprint(i))), Tenant: "t", Workspace: "ws",
			Query: strings.Repeat(fmt.Sprint("query ", i, " "), 50), Body: body}
		if err := db.StoreReceipt(r); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := db.Stats()
		if st.Segments > 0 && st.HeadBytes < threshold {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("receipts never flushed: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	db.Close()
}

// TestReceiptRecordCompressed checks that receipt records store the body
// compressed, and that version 1 records (body as is) still read.
func TestReceiptRecordCompressed(t *testing.T) {
	body := bytes.Repeat([]byte(`{"span_id":"0b2f","artifact_id":"77aa","reason":"BUDGET","relevance_score":0.25},`), 100)
	r := Receipt{ID: uuid.New(), Tenant: "t", Workspace: "ws", Query: "q", Body: body}
	rec := encodeReceiptRecord(&r)
	if len(rec) > len(body)/4 {
		t.Fatalf("record of %d bytes for a %d-byte body", len(rec), len(body))
	}
	v1 := []byte{record.Version}
	v1 = append(v1, r.ID[:]...)
	for _, s := range []string{"t", "ws", "q", "", ""} {
		v1 = codec.AppendString(v1, s)
	}
	v1 = append(v1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	v1 = codec.AppendString(v1, string(body))
	for name, b := range map[string][]byte{"version 2": rec, "version 1": v1} {
		got, err := decodeReceiptRecord(b, true)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out, err := got.unpack(); err != nil || !bytes.Equal(out, body) || got.ID != r.ID {
			t.Fatalf("%s: body %d bytes, %v", name, len(out), err)
		}
	}
}

// TestReceiptPreviewsRebuilt checks that receipts are stored without their
// citations' content previews and served with them, byte-identical, from
// the head, from segments, after compaction and after restarts.
func TestReceiptPreviewsRebuilt(t *testing.T) {
	dir := t.TempDir()
	opts := Options{DisableBackground: true, NoEmbedder: true}
	db := openTest(t, dir, opts)
	texts := []string{
		"The <b>quarterly</b> report & the \"budget\" review were moved to Friday.",
		strings.Repeat("Ünïcode quarterly budget notes with émoji 🚀 and more words; ", 8),
		"Budget meeting: the quarterly numbers need a review before \u2028 the board.",
	}
	for _, tx := range texts {
		if _, err := db.Ingest("t", chat("ws", tx)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := probePack(t.Context(), db, "t", PackProbe{Workspace: "ws", Query: "quarterly budget review"})
	if err != nil || len(res.Result.Citations) < 2 {
		t.Fatalf("pack: %v, %d citations", err, len(res.Result.Citations))
	}
	first, err := db.GetReceipt("t", res.ReceiptID)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Evidence []struct {
			ContentPreview string `json:"content_preview"`
		} `json:"evidence"`
	}
	if err := json.Unmarshal(first.Body, &got); err != nil || len(got.Evidence) != len(res.Result.Citations) {
		t.Fatalf("served body: %v, %d citations", err, len(got.Evidence))
	}
	for i, c := range res.Result.Citations {
		if got.Evidence[i].ContentPreview != c.ContentPreview || c.ContentPreview == "" {
			t.Fatalf("citation %d: served preview %q, pack's %q", i, got.Evidence[i].ContentPreview, c.ContentPreview)
		}
	}
	db.mu.RLock()
	stored, cuts, err := db.receipts.byID[res.ReceiptID].stored()
	db.mu.RUnlock()
	if err != nil || len(cuts) != len(res.Result.Citations) || bytes.Contains(stored, []byte("quarterly</b>")) || bytes.Contains(stored, []byte(`\u003cb\u003equarterly`)) {
		t.Fatalf("stored body keeps previews (%d cuts, %v): %s", len(cuts), err, stored)
	}
	same := func(when string) {
		t.Helper()
		r, err := db.GetReceipt("t", res.ReceiptID)
		if err != nil || !bytes.Equal(r.Body, first.Body) {
			t.Fatalf("%s: receipt differs (%v):\n%s\n%s", when, err, r.Body, first.Body)
		}
	}
	db.Flush()
	same("segment")
	db.Close()
	db = openTest(t, dir, opts)
	same("restart")
	db.Ingest("t", chat("ws", "another quarterly note"))
	db.Flush()
	db.Compact()
	same("compaction")
	db.Close()
	db = openTest(t, dir, opts)
	same("restart after compaction")
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

// TestReceiptStoredAgainAfterExpiry stores a receipt id again after the
// retention dropped it, in the same head: it is served again as the newest,
// and flushes and compactions keep one copy of it.
func TestReceiptStoredAgainAfterExpiry(t *testing.T) {
	dir := t.TempDir()
	opts := Options{DisableBackground: true, ReceiptsPerWorkspace: 2}
	db := openTest(t, dir, opts)
	mk := func(name string) Receipt {
		return Receipt{ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte(name)), Tenant: "t", Workspace: "ws", Query: name, Body: []byte(`{"q":"` + name + `"}`)}
	}
	for _, name := range []string{"a", "b", "c", "a"} {
		if err := db.StoreReceipt(mk(name)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		page, err := db.ListReceipts("t", "ws", "", 0, 10)
		if err != nil || page.Total != 2 || page.Receipts[0].Query != "a" || page.Receipts[1].Query != "c" {
			t.Fatalf("%s: %+v %v", when, page, err)
		}
	}
	check("live")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	db.Compact()
	db.Close()
	if rep, err := Verify(dir); err != nil || len(rep.Faults) != 0 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	db = openTest(t, dir, opts)
	check("restart")
	db.Close()
}
