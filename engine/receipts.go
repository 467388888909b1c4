package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/segment"
	"github.com/loci-memory/loci/wal"
)

// Receipt is a stored decision receipt: the summary fields that listings
// show, and the full receipt body (JSON, as served) byte for byte.
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
	Seq         uint64 // set when applied
}

// ReceiptPage is one page of a workspace's receipts, newest first.
type ReceiptPage struct {
	Receipts []Receipt // Body left empty
	Total    int
}

// encodeReceiptRecord: version | 16 id | tenant | workspace | query | actor |
// pack hash | varint timestamp | f64 confidence | abstain byte | uvarint
// total tokens | body (uvarint length + bytes).
func encodeReceiptRecord(r *Receipt) []byte {
	b := []byte{recordVersion}
	b = append(b, r.ID[:]...)
	for _, s := range []string{r.Tenant, r.Workspace, r.Query, r.ActorID, r.PackHash} {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, r.Timestamp)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Confidence))
	abstain := byte(0)
	if r.Abstain {
		abstain = 1
	}
	b = append(b, abstain)
	b = binary.AppendUvarint(b, uint64(r.TotalTokens))
	b = binary.AppendUvarint(b, uint64(len(r.Body)))
	return append(b, r.Body...)
}

// decodeReceiptRecord decodes a receipt; withBody false skips copying the body.
func decodeReceiptRecord(b []byte, withBody bool) (*Receipt, error) {
	if len(b) == 0 || b[0] != recordVersion {
		return nil, fmt.Errorf("receipt record: unsupported version")
	}
	d := decoder{b: b[1:]}
	r := &Receipt{}
	r.ID = d.uuid()
	r.Tenant, r.Workspace, r.Query, r.ActorID, r.PackHash = d.string(), d.string(), d.string(), d.string(), d.string()
	r.Timestamp = d.varint()
	if d.err == nil && len(d.b) < 9 {
		d.fail("short confidence")
	}
	if d.err == nil {
		r.Confidence = math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		switch d.b[8] {
		case 0:
		case 1:
			r.Abstain = true
		default:
			d.fail("bad abstain byte")
		}
		d.b, d.read = d.b[9:], d.read+9
	}
	r.TotalTokens = int(d.uvarint())
	if body := d.bytes(); withBody {
		r.Body = bytes.Clone(body)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, fmt.Errorf("receipt record: %w", d.err)
	}
	return r, nil
}

// A RECEIPTS section (segment kind 49) holds a workspace's receipts in
// sequence order: u32 count, then per receipt u64 seq, u32 length and the
// receipt in the WAL record encoding (type 17), then count u32 row numbers
// ordering the receipts by id, for lookup.
func encodeReceiptSection(rs []*Receipt) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(rs)))
	for _, r := range rs {
		b = appendSeqFrame(b, r.Seq, encodeReceiptRecord(r))
	}
	byID := make([]uint32, len(rs))
	for i := range byID {
		byID[i] = uint32(i)
	}
	sort.Slice(byID, func(i, j int) bool { return bytes.Compare(rs[byID[i]].ID[:], rs[byID[j]].ID[:]) < 0 })
	for _, i := range byID {
		b = binary.LittleEndian.AppendUint32(b, i)
	}
	return b
}

func decodeReceiptSection(b []byte) ([]*Receipt, error) {
	rows, err := receiptRows(b)
	if err != nil {
		return nil, err
	}
	out := make([]*Receipt, len(rows))
	for i, row := range rows {
		if out[i], err = decodeReceiptRecord(b[row.off:row.off+row.len], true); err != nil {
			return nil, fmt.Errorf("receipts section: receipt %d: %w", i, err)
		}
		out[i].Seq = row.seq
	}
	table := b[len(b)-4*len(rows):]
	for i := range rows {
		row := binary.LittleEndian.Uint32(table[4*i:])
		if int(row) >= len(rows) || i > 0 && bytes.Compare(out[binary.LittleEndian.Uint32(table[4*(i-1):])].ID[:], out[row].ID[:]) >= 0 {
			return nil, fmt.Errorf("receipts section: id order table entry %d is wrong", i)
		}
	}
	return out, nil
}

// receiptStore indexes every live receipt: per workspace in sequence order
// and by id. A receipt still in the head keeps its body in memory; one in a
// segment keeps only its summary here and its location in the mapped
// RECEIPTS section, moved to the new segment by flushes and compactions.
type receiptStore struct {
	byWS map[wsKey][]*storedReceipt
	byID map[uuid.UUID]*storedReceipt
}

type storedReceipt struct {
	Receipt               // Body is nil while the receipt lives in a segment
	seg      *liveSegment // the segment holding it, or nil (head)
	ws       int          // workspace index in seg
	off, len int          // the record's bytes in the RECEIPTS section
}

func newReceiptStore() *receiptStore {
	return &receiptStore{byWS: map[wsKey][]*storedReceipt{}, byID: map[uuid.UUID]*storedReceipt{}}
}

// add indexes a receipt applied from the WAL (body in memory).
func (s *receiptStore) add(r *Receipt) {
	if _, dup := s.byID[r.ID]; dup {
		return
	}
	sr := &storedReceipt{Receipt: *r}
	k := wsKey{r.Tenant, r.Workspace}
	s.byWS[k] = append(s.byWS[k], sr)
	s.byID[r.ID] = sr
}

// place points the receipts of a segment's RECEIPTS sections at it, adding
// the ones not indexed yet (recovery) and dropping their in-memory bodies.
func (s *receiptStore) place(ls *liveSegment) error {
	for wi := range ls.Workspaces() {
		b, ok := ls.Section(wi, segment.KindReceipts)
		if !ok {
			continue
		}
		rows, err := receiptRows(b)
		if err != nil {
			return fmt.Errorf("segment %s: workspace %d: %w", ls.Path(), wi, err)
		}
		for _, row := range rows {
			r, err := decodeReceiptRecord(b[row.off:row.off+row.len], false)
			if err != nil {
				return fmt.Errorf("segment %s: workspace %d: %w", ls.Path(), wi, err)
			}
			r.Seq = row.seq
			sr := s.byID[r.ID]
			if sr == nil {
				sr = &storedReceipt{Receipt: *r}
				k := wsKey{r.Tenant, r.Workspace}
				s.byWS[k] = append(s.byWS[k], sr)
				s.byID[r.ID] = sr
			}
			sr.Body, sr.seg, sr.ws, sr.off, sr.len = nil, ls, wi, row.off, row.len
		}
	}
	return nil
}

func (s *receiptStore) erase(k wsKey) {
	for _, r := range s.byWS[k] {
		delete(s.byID, r.ID)
	}
	delete(s.byWS, k)
}

// body returns a receipt's body. Callers hold mu (segments stay mapped).
func (sr *storedReceipt) body() ([]byte, error) {
	if sr.seg == nil {
		return bytes.Clone(sr.Body), nil
	}
	b, ok := sr.seg.Section(sr.ws, segment.KindReceipts)
	if !ok || sr.off+sr.len > len(b) {
		return nil, fmt.Errorf("segment %s: receipt %s: section missing", sr.seg.Path(), sr.ID)
	}
	r, err := decodeReceiptRecord(b[sr.off:sr.off+sr.len], true)
	if err != nil {
		return nil, fmt.Errorf("segment %s: %w", sr.seg.Path(), err)
	}
	return r.Body, nil
}

// receiptRows checks a RECEIPTS section's framing and returns its rows.
func receiptRows(b []byte) ([]seqFrame, error) {
	rows, rest, err := readSeqFrames(b, "receipts section")
	if err != nil {
		return nil, err
	}
	if len(rest) != 4*len(rows) {
		return nil, fmt.Errorf("receipts section: id order table is %d bytes, want %d", len(rest), 4*len(rows))
	}
	return rows, nil
}

// Event sections (FEEDBACK, RECEIPTS) frame their records the same way:
// u32 count, then per record u64 seq, u32 length and the record's bytes;
// seqs strictly increase.

// seqFrame locates one framed record in a section.
type seqFrame struct {
	seq      uint64
	off, len int
}

func appendSeqFrame(b []byte, seq uint64, rec []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, seq)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec)))
	return append(b, rec...)
}

// readSeqFrames checks the framing of an event section and returns its
// frames and the bytes after them.
func readSeqFrames(b []byte, what string) ([]seqFrame, []byte, error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("%s: %d bytes, want at least 4", what, len(b))
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4)/12 {
		return nil, nil, fmt.Errorf("%s: count %d exceeds its size", what, n)
	}
	frames := make([]seqFrame, 0, n)
	at := 4
	var prev uint64
	for i := uint32(0); i < n; i++ {
		if len(b)-at < 12 {
			return nil, nil, fmt.Errorf("%s: record %d truncated", what, i)
		}
		seq, l := binary.LittleEndian.Uint64(b[at:]), int(binary.LittleEndian.Uint32(b[at+8:]))
		at += 12
		if l > len(b)-at || seq <= prev {
			return nil, nil, fmt.Errorf("%s: record %d: bad length %d or seq %d after %d", what, i, l, seq, prev)
		}
		frames = append(frames, seqFrame{seq, at, l})
		prev = seq
		at += l
	}
	return frames, b[at:], nil
}

// StoreReceipt stores a receipt durably (its WAL record is synced before
// StoreReceipt returns). A receipt whose id is already stored is kept as it
// was: receipt ids derive from the request and the data version, so the same
// id means the same pack.
func (db *DB) StoreReceipt(r Receipt) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.leave()
	return db.storeReceipt(r)
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
	rec.Body = bytes.Clone(r.Body)
	_, err := db.wal.Append(wal.Entry{Type: uint8(recReceipt), Payload: encodeReceiptRecord(&rec),
		Apply: func(seq uint64) { db.apply(recReceipt, seq, nil, &rec) }})
	if err != nil {
		return fmt.Errorf("engine: store receipt: %w", err)
	}
	return nil
}

// GetReceipt returns a receipt of tenant by id, or ErrNotFound (also for
// another tenant's receipt).
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
	body, err := sr.body()
	if err != nil {
		return Receipt{}, fmt.Errorf("engine: %w", err)
	}
	out.Body = body
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
			c.Body = nil
			page.Receipts = append(page.Receipts, c)
		}
		page.Total++
	}
	return page, nil
}

// receiptSections groups receipts per workspace in order, leaving out erased ones.
func receiptSections(rs []*Receipt, hidden func(wsKey, uint64) bool) map[wsKey][]*Receipt {
	out := map[wsKey][]*Receipt{}
	for _, r := range rs {
		k := wsKey{r.Tenant, r.Workspace}
		if !hidden(k, r.Seq) {
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
