package engine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/internal/codec"
	"github.com/loci-memory/loci/vfs"
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

// TestReceiptCutsKept checks that a receipt's body and cuts are returned as
// stored, from the head, from a segment, after restarts and compaction; and
// that cuts the record encoding cannot hold are refused.
func TestReceiptCutsKept(t *testing.T) {
	dir := t.TempDir()
	opts := Options{DisableBackground: true}
	db := openTest(t, dir, opts)
	r := Receipt{ID: uuid.New(), Tenant: "t", Workspace: "ws", Query: "q", Body: []byte(`{"a":"","b":[""],"c":""}`),
		Cuts: []ReceiptCut{{At: 5, Len: 3}, {At: 13, Len: 160}, {At: 21, Len: 0}}}
	if err := db.StoreReceipt(r); err != nil {
		t.Fatal(err)
	}
	for _, cuts := range [][]ReceiptCut{{{At: 23, Len: 1}}, {{At: 5, Len: 1}, {At: 6, Len: 1}}, {{At: -1, Len: 1}}, {{At: 5, Len: -1}}} {
		bad := Receipt{ID: uuid.New(), Tenant: "t", Workspace: "ws", Body: r.Body, Cuts: cuts}
		if err := db.StoreReceipt(bad); err == nil {
			t.Fatalf("cuts %v stored", cuts)
		}
	}
	same := func(when string) {
		t.Helper()
		got, err := db.GetReceipt("t", r.ID)
		if err != nil || !bytes.Equal(got.Body, r.Body) || !slices.Equal(got.Cuts, r.Cuts) {
			t.Fatalf("%s: %s %v %v", when, got.Body, got.Cuts, err)
		}
		if page, err := db.ListReceipts("t", "ws", "", 0, 10); err != nil || page.Total != 1 || page.Receipts[0].Body != nil || page.Receipts[0].Cuts != nil {
			t.Fatalf("%s: listing %+v %v", when, page, err)
		}
	}
	same("head")
	db.Close()
	db = openTest(t, dir, opts)
	same("restart")
	db.Flush()
	same("segment")
	db.StoreReceipt(Receipt{ID: uuid.New(), Tenant: "t", Workspace: "other", Body: []byte(`{}`)})
	db.Flush()
	db.Compact()
	same("compaction")
	db.Close()
	db = openTest(t, dir, opts)
	same("restart after compaction")
	db.Close()
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

// TestReceiptSync: by default a receipt is acknowledged once written, before
// its fsync (wal.Log.AppendDeferred), so a failing fsync does not fail the
// pack that stores it, and the receipt is readable; with SyncReceipts the
// same failure fails StoreReceipt and nothing is stored. An ingest always
// waits for its fsync.
func TestReceiptSync(t *testing.T) {
	eio := errors.New("injected EIO")
	for _, syncReceipts := range []bool{false, true} {
		t.Run(fmt.Sprint("SyncReceipts=", syncReceipts), func(t *testing.T) {
			fsys := vfs.NewInject(vfs.Default)
			db := openTest(t, t.TempDir(), Options{DisableBackground: true, FS: fsys, SyncReceipts: syncReceipts})
			defer db.Close()
			if _, err := db.Ingest("t", chat("ws", "user: hello")); err != nil {
				t.Fatal(err)
			}
			fsys.FailAlways(vfs.OpSync, eio)
			r := Receipt{ID: uuid.NewSHA1(uuid.NameSpaceOID, []byte("sync")), Tenant: "t", Workspace: "ws", Query: "q",
				PackHash: "sha256:aa", Timestamp: 1, Body: []byte(`{"receipt":1}`)}
			err := db.StoreReceipt(r)
			_, getErr := db.GetReceipt("t", r.ID)
			switch {
			case !syncReceipts && (err != nil || getErr != nil):
				t.Fatalf("deferred receipt: store %v, get %v; want both to succeed before the fsync", err, getErr)
			case syncReceipts && (!errors.Is(err, eio) || !errors.Is(getErr, ErrNotFound)):
				t.Fatalf("synced receipt: store %v, get %v; want %v and not found", err, getErr, eio)
			}
			if _, err := db.Ingest("t", chat("ws", "user: again")); err == nil {
				t.Fatal("an ingest was acknowledged while every fsync fails")
			}
			fsys.Reset()
		})
	}
}
