package engine

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/klauspost/compress/zstd"
	"github.com/loci-memory/loci/engine/record"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/wal"
)

// Receipt is a stored decision receipt: the summary fields that listings
// show, and the receipt body, which the engine stores and returns byte for
// byte without looking inside it.
type Receipt struct {
	ID          uuid.UUID
	Tenant      string
	Workspace   string
	Query       string
	ActorID     string
	PackHash    string
	Timestamp   int64 // Unix µs of creation
	Confidence  float64
	Abstain     bool
	TotalTokens int
	Body        []byte
	// Cuts are the parts the caller left out of Body, in order, to rebuild
	// them when it reads the receipt (retrieval's content previews, which
	// are the start of span texts the segments hold): stored and returned
	// with Body, never interpreted. Empty in listings.
	Cuts []ReceiptCut
	Seq  uint64 // set when applied

	// packed is Body compressed (zstd), as the record stores it; the engine
	// keeps only this form in memory.
	packed []byte
}

// ReceiptCut is a part left out of a stored receipt body (engine/record):
// At is the offset of its two-byte placeholder in the body, Len the length
// in bytes of what was left out.
type ReceiptCut = record.ReceiptCut

// DefaultReceiptsPerWorkspace is the default receipt retention
// (Options.ReceiptsPerWorkspace).
const DefaultReceiptsPerWorkspace = 10_000

// The receipt body codec. EncodeAll and DecodeAll are safe for concurrent use.
// Receipts are compressed on the pack path: the fastest level (a 34 KB body
// in 101 µs against 163 µs at the default level, and no larger).
var (
	receiptEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	receiptDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxReceiptBody))
)

// maxReceiptBody bounds a decompressed receipt body.
const maxReceiptBody = record.MaxReceiptBody

// pack compresses r.Body into r.packed (once) and drops r.Body.
func (r *Receipt) pack() {
	if r.packed != nil {
		return // packed already: flushes and compactions only read it
	}
	r.packed = receiptEncoder.EncodeAll(r.Body, make([]byte, 0, len(r.Body)/3))
	r.Body = nil
}

// unpack returns the receipt's body, decompressed.
func (r *Receipt) unpack() ([]byte, error) {
	if r.packed == nil {
		return bytes.Clone(r.Body), nil
	}
	b, err := receiptDecoder.DecodeAll(r.packed, nil)
	if err != nil {
		return nil, fmt.Errorf("receipt %s: body: %w", r.ID, err)
	}
	return b, nil
}

// footprint approximates what a receipt in the head costs in memory; it
// counts toward the flush threshold.
func (r *Receipt) footprint() int64 {
	return int64(len(r.packed) + len(r.Body) + len(r.Query) + len(r.ActorID) + len(r.PackHash) + 256)
}

// ReceiptPage is one page of a workspace's receipts, newest first.
type ReceiptPage struct {
	Receipts []Receipt // Body and Cuts left empty
	Total    int
}

// encodeReceiptRecord encodes a receipt record (record.EncodeReceipt). It
// packs r first.
func encodeReceiptRecord(r *Receipt) []byte {
	r.pack()
	return record.EncodeReceipt(r.toRecord())
}

// toRecord is a packed receipt as the record codec takes it.
func (r *Receipt) toRecord() *record.Receipt {
	return &record.Receipt{ID: r.ID, Tenant: r.Tenant, Workspace: r.Workspace, Query: r.Query, ActorID: r.ActorID,
		PackHash: r.PackHash, Timestamp: r.Timestamp, Confidence: r.Confidence, Abstain: r.Abstain,
		TotalTokens: r.TotalTokens, Cuts: r.Cuts, Body: r.packed, Compressed: true, Seq: r.Seq}
}

// decodeReceiptRecord decodes a receipt of either version, its body packed
// (version 1 bodies are compressed here); withBody false leaves the body
// out. The compressed body is checked only when it is read (unpack).
func decodeReceiptRecord(b []byte, withBody bool) (*Receipt, error) {
	rr, err := record.DecodeReceipt(b, withBody)
	if err != nil {
		return nil, err
	}
	return fromRecord(rr, withBody, true), nil
}

// fromRecord is a decoded receipt record as the engine keeps it, its body
// packed; with clone false the compressed body aliases the record's.
func fromRecord(rr *record.Receipt, withBody, clone bool) *Receipt {
	r := &Receipt{ID: rr.ID, Tenant: rr.Tenant, Workspace: rr.Workspace, Query: rr.Query, ActorID: rr.ActorID,
		PackHash: rr.PackHash, Timestamp: rr.Timestamp, Confidence: rr.Confidence, Abstain: rr.Abstain,
		TotalTokens: rr.TotalTokens, Cuts: rr.Cuts, Seq: rr.Seq}
	switch {
	case !withBody:
	case rr.Compressed:
		r.packed = rr.Body
		if clone {
			r.packed = bytes.Clone(rr.Body)
		}
	default:
		r.Body = rr.Body
		r.pack()
	}
	return r
}

// encodeReceiptSection encodes a RECEIPTS section (record.EncodeReceiptSection)
// of receipts in sequence order, packing them first.
func encodeReceiptSection(rs []*Receipt) []byte {
	recs := make([]*record.Receipt, len(rs))
	for i, r := range rs {
		r.pack()
		recs[i] = r.toRecord()
	}
	return record.EncodeReceiptSection(recs)
}

// decodeReceiptSection decodes a RECEIPTS section. The receipts' compressed
// bodies alias b: a compaction copies them into its output while its input
// segments are still mapped, without holding a second copy of every body.
func decodeReceiptSection(b []byte) ([]*Receipt, error) {
	recs, err := record.DecodeReceiptSection(b)
	if err != nil {
		return nil, err
	}
	out := make([]*Receipt, len(recs))
	for i, rr := range recs {
		out[i] = fromRecord(rr, true, false)
	}
	return out, nil
}

// receiptStore indexes every live receipt: per workspace in sequence order
// and by id. A receipt still in the head keeps its compressed body in
// memory; one in a segment keeps only its summary here and its location in
// the mapped RECEIPTS section, moved to the new segment by flushes and
// compactions.
//
// Retention: a workspace keeps its newest keep receipts. The rule is a pure
// function of the receipts stored, which recovery presents in seq order as
// the live path did (segments in order, then the WAL), so the receipts kept
// after a restart are exactly those kept before it. Expired receipts form a
// prefix by seq: floor is the seq of the oldest one kept, and compaction
// drops the older ones from segments (see receiptsExpired).
type receiptStore struct {
	byWS  map[wsKey][]*storedReceipt
	byID  map[uuid.UUID]*storedReceipt
	floor map[wsKey]uint64
	keep  int
}

type storedReceipt struct {
	Receipt               // packed is nil while the receipt lives in a segment
	seg      *liveSegment // the segment holding it, or nil (head)
	ws       int          // workspace index in seg
	off, len int          // the record's bytes in the RECEIPTS section
}

func newReceiptStore(keep int) *receiptStore {
	return &receiptStore{byWS: map[wsKey][]*storedReceipt{}, byID: map[uuid.UUID]*storedReceipt{}, floor: map[wsKey]uint64{}, keep: keep}
}

// add indexes a receipt applied from the WAL (compressed body in memory).
func (s *receiptStore) add(r *Receipt) {
	if _, dup := s.byID[r.ID]; dup {
		return
	}
	sr := &storedReceipt{Receipt: *r}
	sr.Body = nil
	s.insert(sr)
}

// insert appends a receipt newer than every receipt of its workspace and
// applies the retention.
func (s *receiptStore) insert(sr *storedReceipt) {
	k := wsKey{sr.Tenant, sr.Workspace}
	list := append(s.byWS[k], sr)
	s.byID[sr.ID] = sr
	if over := len(list) - s.keep; over > 0 {
		for _, old := range list[:over] {
			delete(s.byID, old.ID)
		}
		list = append(list[:0:0], list[over:]...) // let the expired ones go
		s.floor[k] = list[0].Seq
	}
	s.byWS[k] = list
}

// expired reports whether retention has dropped the receipt of workspace k at seq.
func (s *receiptStore) expired(k wsKey, seq uint64) bool { return seq < s.floor[k] }

// place points the receipts of a segment's RECEIPTS sections at it, adding
// the ones not indexed yet (recovery) and dropping their in-memory bodies.
// Receipts the retention dropped are left out.
func (s *receiptStore) place(ls *liveSegment) error {
	for wi := range ls.Workspaces() {
		b, ok := ls.Section(wi, segment.KindReceipts)
		if !ok {
			continue
		}
		rows, err := record.ReceiptRows(b)
		if err != nil {
			return fmt.Errorf("segment %s: workspace %d: %w", ls.Path(), wi, err)
		}
		for _, row := range rows {
			r, err := decodeReceiptRecord(b[row.Off:row.Off+row.Len], false)
			if err != nil {
				return fmt.Errorf("segment %s: workspace %d: %w", ls.Path(), wi, err)
			}
			r.Seq = row.Seq
			k := wsKey{r.Tenant, r.Workspace}
			if s.expired(k, r.Seq) {
				continue
			}
			sr := s.byID[r.ID]
			if sr == nil {
				if l := s.byWS[k]; len(l) > 0 && l[len(l)-1].Seq >= r.Seq {
					continue // erased meanwhile (a tombstone hides it), or out of order
				}
				sr = &storedReceipt{Receipt: *r}
				s.insert(sr)
				if s.byID[r.ID] != sr {
					continue
				}
			}
			sr.Body, sr.packed, sr.Cuts, sr.seg, sr.ws, sr.off, sr.len = nil, nil, nil, ls, wi, row.Off, row.Len
		}
	}
	return nil
}

func (s *receiptStore) erase(k wsKey) {
	for _, r := range s.byWS[k] {
		delete(s.byID, r.ID)
	}
	delete(s.byWS, k)
	delete(s.floor, k)
}

// stored returns a receipt's stored body and its cuts. Callers hold mu
// (segments stay mapped).
func (sr *storedReceipt) stored() ([]byte, []ReceiptCut, error) {
	if sr.seg == nil {
		b, err := sr.unpack()
		return b, slices.Clone(sr.Cuts), err
	}
	b, ok := sr.seg.Section(sr.ws, segment.KindReceipts)
	if !ok || sr.off+sr.len > len(b) {
		return nil, nil, fmt.Errorf("segment %s: receipt %s: section missing", sr.seg.Path(), sr.ID)
	}
	r, err := decodeReceiptRecord(b[sr.off:sr.off+sr.len], true)
	if err != nil {
		return nil, nil, fmt.Errorf("segment %s: %w", sr.seg.Path(), err)
	}
	body, err := r.unpack()
	if err != nil {
		return nil, nil, fmt.Errorf("segment %s: %w", sr.seg.Path(), err)
	}
	return body, r.Cuts, nil
}

// StoreReceipt stores a receipt, its body and cuts as given, durably (its
// WAL record is synced before StoreReceipt returns). A receipt whose id is
// already stored is kept as it was: receipt ids derive from the request and
// the data version, so the same id means the same pack.
func (db *DB) StoreReceipt(r Receipt) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	if err := checkCuts(r.Body, r.Cuts); err != nil {
		return fmt.Errorf("engine: store receipt %s: %w", r.ID, err)
	}
	return db.storeReceipt(r)
}

// checkCuts checks that cuts lie in body, in order, without overlapping,
// as the record encoding requires.
func checkCuts(body []byte, cuts []ReceiptCut) error {
	prev := 0
	for i, c := range cuts {
		if c.At < prev || c.At+2 > len(body) || c.Len < 0 || c.Len > maxReceiptBody {
			return fmt.Errorf("cut %d (at %d, %d bytes) out of place", i, c.At, c.Len)
		}
		prev = c.At + 2
	}
	return nil
}

// storeReceipt is StoreReceipt for callers already inside enter (nesting
// enter could deadlock against a waiting Close).
func (db *DB) storeReceipt(r Receipt) error {
	db.mu.RLock()
	_, exists := db.receipts.byID[r.ID]
	db.mu.RUnlock()
	if exists {
		return nil
	}
	rec := r
	rec.packed, rec.Cuts = nil, slices.Clone(r.Cuts)
	rec.pack() // compressed here, on the caller's goroutine, not on the WAL writer
	entry := wal.Entry{Type: uint8(record.TypeReceipt), Payload: encodeReceiptRecord(&rec),
		Apply: func(seq uint64) { db.apply(record.TypeReceipt, seq, nil, &rec) }}
	if err := db.appendWrite(Write{Entries: []wal.Entry{entry}, Receipt: rec.ID, Deferred: !db.opts.SyncReceipts}); err != nil {
		return fmt.Errorf("engine: store receipt: %w", err)
	}
	return nil
}

// GetReceipt returns a receipt of tenant by id, its body and cuts as stored,
// or ErrNotFound (also for another tenant's receipt).
func (db *DB) GetReceipt(tenant string, id uuid.UUID) (Receipt, error) {
	if err := db.enter(); err != nil {
		return Receipt{}, err
	}
	defer db.leave()
	db.mu.RLock()
	defer db.mu.RUnlock()
	sr, ok := db.receipts.byID[id]
	if !ok || sr.Tenant != tenant {
		return Receipt{}, ErrNotFound
	}
	out := sr.Receipt
	body, cuts, err := sr.stored()
	if err != nil {
		return Receipt{}, fmt.Errorf("engine: receipt %s: %w", id, err)
	}
	out.Body, out.Cuts, out.packed = body, cuts, nil
	return out, nil
}

// ListReceipts returns a page of a workspace's receipts, newest first,
// optionally only those with the given pack hash. Total counts all matches.
func (db *DB) ListReceipts(tenant, ws, packHash string, offset, limit int) (ReceiptPage, error) {
	if err := db.enter(); err != nil {
		return ReceiptPage{}, err
	}
	defer db.leave()
	db.mu.RLock()
	defer db.mu.RUnlock()
	all := db.receipts.byWS[wsKey{tenant, ws}]
	var page ReceiptPage
	for i := len(all) - 1; i >= 0; i-- {
		r := all[i]
		if packHash != "" && r.PackHash != packHash {
			continue
		}
		if page.Total >= offset && len(page.Receipts) < limit {
			c := r.Receipt
			c.Body, c.Cuts = nil, nil
			page.Receipts = append(page.Receipts, c)
		}
		page.Total++
	}
	return page, nil
}

// receiptSections groups receipts per workspace in order, leaving out erased
// ones. A receipt id stored again after the retention dropped it appears
// twice: only the newest is kept, so a section never repeats an id.
func receiptSections(rs []*Receipt, hidden func(wsKey, uint64) bool) map[wsKey][]*Receipt {
	newest := make(map[uuid.UUID]uint64, len(rs))
	for _, r := range rs {
		newest[r.ID] = max(newest[r.ID], r.Seq)
	}
	out := map[wsKey][]*Receipt{}
	for _, r := range rs {
		k := wsKey{r.Tenant, r.Workspace}
		if !hidden(k, r.Seq) && newest[r.ID] == r.Seq {
			out[k] = append(out[k], r)
		}
	}
	return out
}

// attachReceipts adds RECEIPTS sections to the workspaces of a new segment,
// creating entries for workspaces that have no artifacts in it.
func attachReceipts(ws []segment.WorkspaceData, rs []*Receipt, hidden func(wsKey, uint64) bool) []segment.WorkspaceData {
	groups := receiptSections(rs, hidden)
	keys := make([]wsKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b wsKey) int {
		if a.Tenant != b.Tenant {
			return cmpString(a.Tenant, b.Tenant)
		}
		return cmpString(a.Workspace, b.Workspace)
	})
	for _, k := range keys {
		ws = appendSection(ws, k, segment.Section{Kind: segment.KindReceipts, Data: encodeReceiptSection(groups[k])})
	}
	return ws
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// retainedReceipts leaves out the receipts the retention dropped, for a
// compaction's output.
func (db *DB) retainedReceipts(rs []*Receipt) []*Receipt {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return slices.DeleteFunc(rs, func(r *Receipt) bool { return db.receipts.expired(wsKey{r.Tenant, r.Workspace}, r.Seq) })
}

// receiptsExpired reports whether expired receipts take enough of segment s
// to rewrite it on their own: at least half its bytes, or
// expiredRewriteBytes. Smaller amounts go when the segment is merged anyway.
// Callers hold mu.
func (db *DB) receiptsExpired(s *liveSegment) bool {
	var dead int64
	for wi, w := range s.Workspaces() {
		k := wsKey{w.Tenant, w.Workspace}
		b, _ := s.Section(wi, segment.KindReceipts)
		if first, ok := record.FirstSeq(b); !ok || !db.receipts.expired(k, first) {
			continue // no receipts, or the oldest is kept: so are the others
		}
		frames, _, err := record.SeqFrames(b, "receipts section")
		if err != nil {
			return true // a rewrite reports the damage
		}
		for _, f := range frames {
			if !db.receipts.expired(k, f.Seq) {
				break
			}
			dead += int64(12 + f.Len)
		}
	}
	return dead > 0 && (2*dead >= s.entry.Size || dead >= expiredRewriteBytes)
}

// expiredRewriteBytes: expired receipts this large justify rewriting a
// segment whatever its size.
const expiredRewriteBytes = 64 << 20

// ReceiptStats returns how many receipts are kept, across workspaces, and
// the bytes of their stored records (compressed bodies included).
func (db *DB) ReceiptStats() (n int, bytes int64) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	for _, sr := range db.receipts.byID {
		if sr.seg != nil {
			bytes += int64(sr.len)
		} else {
			// The record's fixed fields take at most 40 bytes besides these.
			bytes += int64(len(sr.packed) + len(sr.Tenant) + len(sr.Workspace) + len(sr.Query) + len(sr.ActorID) + len(sr.PackHash) + 40)
		}
	}
	return len(db.receipts.byID), bytes
}
