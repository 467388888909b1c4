package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/embed/glove"
)

// wordRows is a TokenRower for tests: one 8-byte row per word of the text,
// a hash of the model, the word and its place, so that rows are a pure
// function of the text and every span's differ.
type wordRows struct {
	model string
	calls atomic.Int64
	delay time.Duration
	// gate, when set, holds the rows of texts of the turns tagged "gated"
	// (ingestTurnsIn, TestWaitEmbeddedTokenRows) until it is closed.
	gate  atomic.Pointer[chan struct{}]
	gated atomic.Int64 // calls held at gate so far
}

func (w *wordRows) Model() string { return w.model }
func (w *wordRows) RowBytes() int { return 8 }
func (w *wordRows) Rows(text string) ([]byte, error) {
	w.calls.Add(1)
	time.Sleep(w.delay)
	if g := w.gate.Load(); g != nil && strings.Contains(text, "gated turn") {
		w.gated.Add(1)
		<-*g
	}
	var b []byte
	for i, word := range strings.Fields(text) {
		h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%s", w.model, i, word)))
		b = append(b, h[:8]...)
	}
	return b, nil
}

// checkTokenRows checks the stored rows of every document of workspace ws
// against want's rows of its text, and counts the documents with and
// without stored rows.
func checkTokenRows(t *testing.T, db *DB, ws string, want TokenRower) (stored, missing int) {
	t.Helper()
	err := db.View("t", ws, func(v *View) error {
		for part := range v.LexicalParts() {
			for doc := range uint32(v.NumDocs(part)) {
				sp, _, ok, err := v.Doc(part, doc, nil)
				if err != nil || !ok {
					t.Fatalf("part %d doc %d: %v %v", part, doc, ok, err)
				}
				got := v.TokenRows(part, doc)
				if got == nil {
					missing++
					continue
				}
				stored++
				w, _ := (&wordRows{model: want.Model()}).Rows(sp.Text) // not counted in want's calls
				if !bytes.Equal(got, w) {
					t.Errorf("part %d doc %d (%q): rows differ", part, doc, sp.Text)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return stored, missing
}

// rowFiles lists the files under dir/tokenrows, relative to it.
func rowFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(dir, tokenRowDir)
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			r, _ := filepath.Rel(root, p)
			out = append(out, r)
		}
		return nil
	})
	return out
}

func TestTokenRowsFollowSegments(t *testing.T) {
	dir := t.TempDir()
	rower := &wordRows{model: "test/rows v1"}
	db := openTest(t, dir, Options{DisableBackground: true, CompactionMinSegments: 2, TokenRows: rower})
	ingest := func(ws string, n int) {
		t.Helper()
		for i := range n {
			if _, err := db.Ingest("t", chat(ws, fmt.Sprintf("note %d of %s about the quarterly plan", i, ws))); err != nil {
				t.Fatal(err)
			}
		}
	}
	ingest("a", 5)
	ingest("b", 3)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	ingest("a", 4)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	ingest("a", 2) // stays in the head
	if got := db.TokenRowsPending(); got != 4 {
		t.Fatalf("pending before the build = %d, want 4 (two segments, two head artifacts)", got)
	}
	if s, m := checkTokenRows(t, db, "a", rower); s != 0 || m != 11 {
		t.Fatalf("before the build: %d stored, %d missing; want 0, 11", s, m)
	}
	n, err := db.BuildTokenRows()
	if err != nil || n != 2 {
		t.Fatalf("BuildTokenRows = %d, %v; want 2 files", n, err)
	}
	if s, m := checkTokenRows(t, db, "a", rower); s != 11 || m != 0 {
		t.Fatalf("after the build, a: %d stored, %d missing; want 11 (the head's too), 0", s, m)
	}
	var headBytes int64
	db.mu.RLock()
	for _, ha := range db.head.byID {
		headBytes += ha.rowBytes
	}
	db.mu.RUnlock()
	if headBytes < 2*8 {
		t.Fatalf("the head's rows count %d bytes", headBytes)
	}
	if s, m := checkTokenRows(t, db, "b", rower); s != 3 || m != 0 {
		t.Fatalf("after the build, b: %d stored, %d missing; want 3, 0", s, m)
	}
	if n, err := db.BuildTokenRows(); err != nil || n != 0 || db.TokenRowsPending() != 0 {
		t.Fatalf("a second build = %d, %v, %d pending; want nothing to do", n, err, db.TokenRowsPending())
	}

	// A flush hands the head's rows to its segment's file: none computed
	// again.
	calls := rower.calls.Load()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, err := db.BuildTokenRows(); err != nil || n != 1 || rower.calls.Load() != calls {
		t.Fatalf("build after the flush = %d, %v, %d rows computed; want 1 file of carried rows", n, err, rower.calls.Load()-calls)
	}
	db.mu.RLock()
	carried := len(db.tokenRows.carry)
	db.mu.RUnlock()
	if carried != 0 {
		t.Fatalf("%d carried rows kept after their file was written", carried)
	}

	// Compaction: the merged segment gets its file, copied from its
	// inputs' (none computed again), and the inputs' go.
	calls = rower.calls.Load()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if n, err := db.BuildTokenRows(); err != nil || n != 0 || db.tokenRows.copied.Load() != 1 || rower.calls.Load() != calls {
		t.Fatalf("build after compaction = %d, %v, %d copied, %d computed; want the file copied", n, err, db.tokenRows.copied.Load(), rower.calls.Load()-calls)
	}
	files := rowFiles(t, dir)
	db.mu.RLock()
	want := []string{}
	for _, s := range db.segments {
		r, _ := filepath.Rel(filepath.Join(dir, tokenRowDir), db.tokenRowPath(s.Path()))
		want = append(want, r)
	}
	db.mu.RUnlock()
	if len(want) != 1 || !slices.Equal(files, want) {
		t.Fatalf("files after compaction = %v, want %v (one segment's)", files, want)
	}
	if !strings.HasPrefix(files[0], "test_rows_v1"+string(filepath.Separator)) {
		t.Fatalf("file %s: not in the model's directory", files[0])
	}
	if s, m := checkTokenRows(t, db, "a", rower); s != 11 || m != 0 {
		t.Fatalf("after compaction, a: %d stored, %d missing; want 11, 0", s, m)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened, the file is opened, not built again.
	calls = rower.calls.Load()
	db = openTest(t, dir, Options{DisableBackground: true, TokenRows: rower})
	if got := db.TokenRowsPending(); got != 0 {
		t.Fatalf("%d pending after reopening: Open must attach the files there are (before any compaction runs)", got)
	}
	if n, err := db.BuildTokenRows(); err != nil || n != 0 {
		t.Fatalf("build after reopening = %d, %v; want the file opened", n, err)
	}
	if rower.calls.Load() != calls {
		t.Fatalf("reopening computed rows again")
	}
	if s, _ := checkTokenRows(t, db, "a", rower); s != 11 {
		t.Fatalf("after reopening: %d stored, want 11", s)
	}
	db.Close()

	// Another model: its rows replace the old model's directory.
	other := &wordRows{model: "other"}
	db = openTest(t, dir, Options{DisableBackground: true, TokenRows: other})
	if n, err := db.BuildTokenRows(); err != nil || n != 1 {
		t.Fatalf("build of another model = %d, %v; want 1", n, err)
	}
	if files := rowFiles(t, dir); len(files) != 1 || !strings.HasPrefix(files[0], "other"+string(filepath.Separator)) {
		t.Fatalf("files of another model = %v", files)
	}
	if s, _ := checkTokenRows(t, db, "a", other); s != 11 {
		t.Fatalf("rows of another model: %d stored, want 11", s)
	}
}

// TestTokenRowsDamage: a damaged document reads as none (computed again),
// its neighbours still read; a file that does not fit its segment is
// built again, as are stray files removed.
func TestTokenRowsDamage(t *testing.T) {
	dir := t.TempDir()
	rower := &wordRows{model: "m"}
	db := openTest(t, dir, Options{DisableBackground: true, TokenRows: rower})
	for i := range 4 {
		if _, err := db.Ingest("t", chat("a", fmt.Sprintf("turn %d says something", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.BuildTokenRows(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	files := rowFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("files = %v", files)
	}
	path := filepath.Join(dir, tokenRowDir, files[0])
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[16] ^= 1 // the first document's first row
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, tokenRowDir, "m", "tokenrows-123.tmp")
	os.WriteFile(stray, []byte("left by a crash"), 0o644)

	db = openTest(t, dir, Options{DisableBackground: true, TokenRows: rower})
	if n, err := db.BuildTokenRows(); err != nil || n != 0 {
		t.Fatalf("build = %d, %v; a damaged document is read as missing, the file kept", n, err)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("stray file still there: %v", err)
	}
	if s, m := checkTokenRows(t, db, "a", rower); s != 3 || m != 1 {
		t.Fatalf("with a damaged document: %d stored, %d missing; want 3, 1", s, m)
	}
	db.Close()

	if err := os.WriteFile(path, b[:len(b)-1], 0o644); err != nil { // no footer
		t.Fatal(err)
	}
	db = openTest(t, dir, Options{DisableBackground: true, TokenRows: rower})
	if n, err := db.BuildTokenRows(); err != nil || n != 1 {
		t.Fatalf("build over a truncated file = %d, %v; want it built again", n, err)
	}
	if s, m := checkTokenRows(t, db, "a", rower); s != 4 || m != 0 {
		t.Fatalf("rebuilt: %d stored, %d missing; want 4, 0", s, m)
	}
}

// TestTokenRowsWorker: with background work on, the worker builds a new
// segment's file by itself, and Close stops a build in progress without
// leaving a file behind.
func TestTokenRowsWorker(t *testing.T) {
	dir := t.TempDir()
	rower := &wordRows{model: "m"}
	db := openTest(t, dir, Options{TokenRows: rower})
	for i := range 3 {
		if _, err := db.Ingest("t", chat("a", fmt.Sprintf("turn %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if s, _ := checkTokenRows(t, db, "a", rower); s == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker computed no rows of the head in 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	calls := rower.calls.Load()
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for db.TokenRowsPending() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the worker built no file in 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s, _ := checkTokenRows(t, db, "a", rower); s != 3 || rower.calls.Load() != calls {
		t.Fatalf("worker's rows: %d stored, %d computed again; want 3, 0", s, rower.calls.Load()-calls)
	}

	rower.delay = 50 * time.Millisecond // a slow build, cut short by Close
	for i := range 40 {
		if _, err := db.Ingest("t", chat("a", fmt.Sprintf("more %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close waited %v for the build", took)
	}
	if files := rowFiles(t, dir); len(files) != 1 {
		t.Fatalf("files after a build cut short = %v, want the first segment's only", files)
	}
}

// TestTokenRowsCompaction: a compaction that drops an erased artifact
// copies the rows of what it keeps, in its new order; one whose input has
// neither a file nor rows its head computed leaves the output to the
// worker, which computes it.
func TestTokenRowsCompaction(t *testing.T) {
	dir := t.TempDir()
	rower := &wordRows{model: "m"}
	db := openTest(t, dir, Options{DisableBackground: true, CompactionMinSegments: 2, TokenRows: rower})
	var erase IngestResult
	for seg := range 3 {
		for i := range 3 {
			r, err := db.Ingest("t", chat("a", fmt.Sprintf("segment %d turn %d says a thing", seg, i)))
			if err != nil {
				t.Fatal(err)
			}
			if seg == 1 && i == 1 {
				erase = r
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.BuildTokenRows(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EraseArtifact("t", erase.ArtifactID); err != nil {
		t.Fatal(err)
	}
	calls := rower.calls.Load()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if n, err := db.BuildTokenRows(); err != nil || n != 0 || rower.calls.Load() != calls {
		t.Fatalf("after compaction: %d built, %v, %d computed; want the rows copied", n, err, rower.calls.Load()-calls)
	}
	if s, m := checkTokenRows(t, db, "a", rower); s != 8 || m != 0 {
		t.Fatalf("after compaction: %d stored, %d missing; want 8, 0", s, m)
	}

	// An input without a file, whose head computed no rows: the output's
	// rows are computed.
	if _, err := db.Ingest("t", chat("a", "one more turn")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	copied := db.tokenRows.copied.Load()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if db.tokenRows.copied.Load() != copied {
		t.Fatal("a compaction copied rows an input did not have")
	}
	if n, err := db.BuildTokenRows(); err != nil || n != 1 {
		t.Fatalf("build = %d, %v; want the output's file computed", n, err)
	}
	if s, m := checkTokenRows(t, db, "a", rower); s != 9 || m != 0 {
		t.Fatalf("at the end: %d stored, %d missing; want 9, 0", s, m)
	}
	if files := rowFiles(t, dir); len(files) != 1 {
		t.Fatalf("files = %v, want the one segment's", files)
	}
}

// TestTokenRowsCarried: the rows a head computed serve packs from the
// moment it is flushed, before the worker writes its segment's file, and a
// compaction of that segment copies them: none is computed twice.
func TestTokenRowsCarried(t *testing.T) {
	dir := t.TempDir()
	rower := &wordRows{model: "m"}
	db := openTest(t, dir, Options{DisableBackground: true, CompactionMinSegments: 2, TokenRows: rower})
	ingest := func(seg int) {
		t.Helper()
		for i := range 3 {
			if _, err := db.Ingest("t", chat("a", fmt.Sprintf("segment %d turn %d", seg, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	ingest(0)
	if _, err := db.BuildTokenRows(); err != nil { // the head's rows
		t.Fatal(err)
	}
	calls := rower.calls.Load()
	if calls != 3 {
		t.Fatalf("%d rows computed for 3 head turns", calls)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if files := rowFiles(t, dir); len(files) != 0 {
		t.Fatalf("files before the worker ran: %v", files)
	}
	if s, m := checkTokenRows(t, db, "a", rower); s != 3 || m != 0 {
		t.Fatalf("after the flush, before the file: %d stored, %d missing; want 3, 0", s, m)
	}

	ingest(1)
	if n, err := db.BuildTokenRows(); err != nil || n != 1 { // the first file, and the new head's rows
		t.Fatalf("build = %d, %v; want the first segment's file", n, err)
	}
	if err := db.Flush(); err != nil { // a second segment, its rows carried
		t.Fatal(err)
	}
	calls = rower.calls.Load()
	copied := db.tokenRows.copied.Load()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if db.tokenRows.copied.Load() != copied+1 {
		t.Fatal("the compaction did not copy the rows of a file and of a carried segment")
	}
	if n, err := db.BuildTokenRows(); err != nil || n != 0 || rower.calls.Load() != calls {
		t.Fatalf("after compaction: %d built, %v, %d computed; want the rows copied", n, err, rower.calls.Load()-calls)
	}
	if s, m := checkTokenRows(t, db, "a", rower); s != 6 || m != 0 {
		t.Fatalf("after compaction: %d stored, %d missing; want 6, 0", s, m)
	}
	if rower.calls.Load() != 6 {
		t.Fatalf("%d rows computed for 6 turns", rower.calls.Load())
	}
}

func TestModelDirName(t *testing.T) {
	for _, c := range []struct{ model, want string }{
		{"answerai-colbert-small-v1-w8a8.content.i8x128", "answerai-colbert-small-v1-w8a8.content.i8x128"},
		{"test/rows v1", "test_rows_v1"},
		{"", "m"},
		{"..", "m.."},
		{"é", "__"}, // two bytes
	} {
		if got := modelDirName(c.model); got != c.want {
			t.Errorf("modelDirName(%q) = %q, want %q", c.model, got, c.want)
		}
	}
}

// Reindex carries the token-row files to the segments it rewrites (rows
// depend on the text alone), with or without the row source configured,
// and removes the old segments' files.
func TestTokenRowsReindex(t *testing.T) {
	dir := t.TempDir()
	rower := &wordRows{model: "m"}
	db := openTest(t, dir, Options{DisableBackground: true, TokenRows: rower})
	for seg := range 2 {
		for i := range 3 {
			if _, err := db.Ingest("t", chat("a", fmt.Sprintf("segment %d turn %d says a thing", seg, i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := db.BuildTokenRows(); err != nil || n != 2 {
		t.Fatalf("build = %d, %v", n, err)
	}
	before := rowFiles(t, dir)
	db.Close()

	for _, withRows := range []bool{false, true} {
		opts := Options{DisableBackground: true, Reindex: true, EmbedInBackground: true}
		if withRows {
			opts.TokenRows = &wordRows{model: "m"}
		}
		db = openTest(t, dir, opts)
		if err := db.Reindex(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		db.Close()
		files := rowFiles(t, dir)
		if len(files) != 2 || slices.Equal(files, before) {
			t.Fatalf("with rows %v: files %v, before %v; want the two new segments' files", withRows, files, before)
		}
		before = files

		again := &wordRows{model: "m"}
		db = openTest(t, dir, Options{DisableBackground: true, TokenRows: again})
		if n, err := db.BuildTokenRows(); err != nil || n != 0 || again.calls.Load() != 0 {
			t.Fatalf("with rows %v: after reindex %d built, %v, %d computed; want the rows copied", withRows, n, err, again.calls.Load())
		}
		if s, m := checkTokenRows(t, db, "a", again); s != 6 || m != 0 {
			t.Fatalf("with rows %v: %d stored, %d missing; want 6, 0", withRows, s, m)
		}
		db.Close()
	}
}

// TestTokenRowsWorkspaceLimit: with TokenRowsMaxWorkspaceSpans, the spans
// of a workspace past the limit get no rows, in the head or in a segment,
// and are not computed; a small workspace's are; a compaction keeps both.
func TestTokenRowsWorkspaceLimit(t *testing.T) {
	dir := t.TempDir()
	rower := &wordRows{model: "m"}
	db := openTest(t, dir, Options{DisableBackground: true, CompactionMinSegments: 2, TokenRows: rower, TokenRowsMaxWorkspaceSpans: 4})
	ingest := func(ws string, n int) {
		t.Helper()
		for i := range n {
			if _, err := db.Ingest("t", chat(ws, fmt.Sprintf("turn %d of %s", i, ws))); err != nil {
				t.Fatal(err)
			}
		}
	}
	ingest("small", 3)
	ingest("large", 6)
	if _, err := db.BuildTokenRows(); err != nil { // the head's
		t.Fatal(err)
	}
	if s, m := checkTokenRows(t, db, "small", rower); s != 3 || m != 0 {
		t.Fatalf("head, small: %d stored, %d missing; want 3, 0", s, m)
	}
	if s, m := checkTokenRows(t, db, "large", rower); s != 0 || m != 6 {
		t.Fatalf("head, large: %d stored, %d missing; want 0, 6", s, m)
	}
	if got := rower.calls.Load(); got != 3 {
		t.Fatalf("rows computed for %d spans, want the small workspace's 3", got)
	}
	if db.TokenRowsPending() != 0 {
		t.Fatalf("pending = %d: a skipped artifact must not stay pending", db.TokenRowsPending())
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	ingest("small", 1)
	ingest("large", 2)
	if err := db.Flush(); err != nil { // the second segment: nothing carried
		t.Fatal(err)
	}
	if n, err := db.BuildTokenRows(); err != nil || n != 2 {
		t.Fatalf("BuildTokenRows = %d, %v; want 2 files", n, err)
	}
	if s, m := checkTokenRows(t, db, "small", rower); s != 4 || m != 0 {
		t.Fatalf("segments, small: %d stored, %d missing; want 4, 0", s, m)
	}
	if s, m := checkTokenRows(t, db, "large", rower); s != 0 || m != 8 {
		t.Fatalf("segments, large: %d stored, %d missing; want 0, 8", s, m)
	}
	if got := rower.calls.Load(); got != 4 {
		t.Fatalf("rows computed for %d spans, want the small workspace's 4", got)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if s, m := checkTokenRows(t, db, "small", rower); s != 4 || m != 0 || db.TokenRowsPending() != 0 {
		t.Fatalf("after compaction, small: %d stored, %d missing, %d pending; want 4, 0, 0", s, m, db.TokenRowsPending())
	}
	if s, m := checkTokenRows(t, db, "large", rower); s != 0 || m != 8 || rower.calls.Load() != 4 {
		t.Fatalf("after compaction, large: %d stored, %d missing, %d computed; want 0, 8, 4", s, m, rower.calls.Load())
	}
}

// TestWaitEmbeddedTokenRows: WaitEmbedded also waits for the token rows
// of a workspace whose rows are stored, in the head and in a segment
// flushed before its rows were computed, and not for those of a
// workspace past the limit or of another tenant.
func TestWaitEmbeddedTokenRows(t *testing.T) {
	rower := &wordRows{model: "m", delay: 20 * time.Millisecond}
	db := openTest(t, t.TempDir(), Options{TokenRows: rower, TokenRowsMaxWorkspaceSpans: 8})
	ingest := func(ws string, n int) []uuid.UUID {
		t.Helper()
		return ingestTurnsIn(t, db, ws, n, ws)
	}
	wait := func(tenant string, ids []uuid.UUID) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := db.WaitEmbedded(ctx, tenant, ids); err != nil {
			t.Fatalf("WaitEmbedded: %v", err)
		}
	}

	wait("t", ingest("head", 6))
	if s, m := checkTokenRows(t, db, "head", rower); s != 6 || m != 0 {
		t.Fatalf("head: %d stored, %d missing after the wait; want 6, 0", s, m)
	}

	ids := ingest("flushed", 6)
	if err := db.Flush(); err != nil { // before the worker is done (6 x 20 ms)
		t.Fatal(err)
	}
	wait("t", ids)
	if s, m := checkTokenRows(t, db, "flushed", rower); s != 6 || m != 0 {
		t.Fatalf("flushed: %d stored, %d missing after the wait; want 6, 0", s, m)
	}

	// Past the limit no rows are stored, and none are waited for.
	wait("t", ingest("large", 9))
	if s, _ := checkTokenRows(t, db, "large", rower); s != 0 {
		t.Fatalf("large: %d stored, want 0", s)
	}

	// Another tenant's ids do not wait, even while their rows are pending
	// (the worker holds them until gate opens); rows being computed count
	// as pending.
	gate := make(chan struct{})
	rower.gate.Store(&gate)
	gated := ingest("gated", 1)
	for deadline := time.Now().Add(20 * time.Second); rower.gated.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker did not start on the gated rows in 20 s")
		}
	}
	if n := db.TokenRowsPending(); n != 1 {
		t.Errorf("TokenRowsPending = %d while the worker computes one artifact's rows, want 1", n)
	}
	wait("other", gated)
	close(gate)
	wait("t", gated)
}

// TestWaitEmbeddedCarriedRows: an artifact whose rows its head computed
// is not waited for once flushed, while its segment's file waits for the
// worker (here held by another artifact's rows); one flushed before its
// rows were computed is waited for until they are.
func TestWaitEmbeddedCarriedRows(t *testing.T) {
	rower := &wordRows{model: "m"}
	db := openTest(t, t.TempDir(), Options{TokenRows: rower})
	wait := func(ids []uuid.UUID, within time.Duration) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		return db.WaitEmbedded(ctx, "t", ids)
	}
	ready := ingestTurnsIn(t, db, "a", 3, "ready")
	if err := wait(ready, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	rower.gate.Store(&gate)
	gated := ingestTurnsIn(t, db, "b", 1, "gated")
	for deadline := time.Now().Add(20 * time.Second); rower.gated.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker did not start on the gated rows in 20 s")
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if files := rowFiles(t, db.dir); len(files) != 0 {
		t.Fatalf("files while the worker is held: %v", files)
	}
	if err := wait(ready, 20*time.Second); err != nil {
		t.Fatalf("rows carried by the flushed segment: %v", err)
	}
	if s, m := checkTokenRows(t, db, "a", rower); s != 3 || m != 0 {
		t.Fatalf("carried: %d stored, %d missing; want 3, 0", s, m)
	}
	if err := wait(gated, 50*time.Millisecond); err == nil {
		t.Fatal("an artifact flushed before its rows were computed was not waited for")
	}
	close(gate)
	if err := wait(gated, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if s, m := checkTokenRows(t, db, "b", rower); s != 1 || m != 0 {
		t.Fatalf("gated: %d stored, %d missing; want 1, 0", s, m)
	}
}

// A flushed segment gets its file before the worker computes more of the
// head's queue, which sustained ingest never empties, when its head had
// computed every row (a copy, at once), or when the rows carried by
// segments without a file pass carryLimit (its missing rows computed).
func TestCarriedRowsBounded(t *testing.T) {
	for _, c := range []struct {
		name  string
		later bool // a turn flushed before its rows were computed
		limit int64
		first bool // the segment's file before the head's rows
	}{
		{"every row carried", false, 1 << 30, true},
		{"over the limit", true, 1, true},
		{"under the limit", true, 1 << 30, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rower := &wordRows{model: "m"}
			db := openTest(t, t.TempDir(), Options{DisableBackground: true, TokenRows: rower})
			db.tokenRows.carryLimit = c.limit
			ingestTurnsIn(t, db, "a", 3, "ready")
			if _, err := db.BuildTokenRows(); err != nil {
				t.Fatal(err)
			}
			turns := 3
			if c.later {
				ingestTurnsIn(t, db, "a", 1, "later") // its rows not computed
				turns++
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			gate := make(chan struct{})
			rower.gate.Store(&gate)
			ingestTurnsIn(t, db, "b", 1, "gated") // the queue: one artifact, held
			built := make(chan error, 1)
			go func() {
				_, err := db.BuildTokenRows()
				built <- err
			}()
			for deadline := time.Now().Add(20 * time.Second); rower.gated.Load() == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					close(gate)
					t.Fatal("the build did not start on the gated rows in 20 s")
				}
			}
			files := rowFiles(t, db.dir)
			close(gate)
			if err := <-built; err != nil {
				t.Fatal(err)
			}
			if got := len(files) == 1; got != c.first {
				t.Fatalf("files while the head's rows were computed: %v; want the segment's first: %v", files, c.first)
			}
			if s, m := checkTokenRows(t, db, "a", rower); s != turns || m != 0 {
				t.Fatalf("%d stored, %d missing; want %d, 0", s, m, turns)
			}
			if s, m := checkTokenRows(t, db, "b", rower); s != 1 || m != 0 {
				t.Fatalf("head: %d stored, %d missing; want 1, 0", s, m)
			}
			if n := rower.calls.Load(); n != int64(turns+1) {
				t.Fatalf("%d rows computed for %d turns", n, turns+1)
			}
		})
	}
}

// While requests run, the rows' worker leaves the cores to an in-process
// embedder with a backlog (embeddingFirst): no rows are computed while
// vectors are due, and they follow once the vectors are in.
func TestTokenRowsYieldToEmbedding(t *testing.T) {
	e := &sizesEmbedder{Embedder: glove.New(), gate: make(chan struct{})}
	rower := &wordRows{model: "m"}
	db := openTest(t, t.TempDir(), Options{Embedder: e, EmbedInBackground: true, TokenRows: rower})
	defer db.Close()
	db.embedding.foreground.Add(1) // an ingest runs throughout
	defer db.embedding.foreground.Add(-1)

	ingestTurns(t, db, 5, "first")
	// The embedder is held at its gate. Unheld, the rows' worker computes
	// these five turns' rows in well under a millisecond.
	time.Sleep(300 * time.Millisecond)
	if n := rower.calls.Load(); n != 0 {
		t.Fatalf("%d rows computed while the embedder had a backlog and an ingest ran, want 0", n)
	}
	close(e.gate)
	drained(t, db)
	for deadline := time.Now().Add(10 * time.Second); db.TokenRowsPending() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows computed, %d artifacts pending 10 s after the embedder's backlog drained", rower.calls.Load(), db.TokenRowsPending())
		}
	}
	if s, m := checkTokenRows(t, db, "ws", rower); s != 5 || m != 0 {
		t.Fatalf("%d stored, %d missing; want 5, 0", s, m)
	}
}
