package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
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
