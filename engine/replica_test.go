package engine

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine/manifest"
)

// The tests here check the groundwork of replicated writes (issue 14): two
// engines applying the same writes, with every id and time fixed by the
// caller, end in the same state, read for read and segment byte for byte.

// replicaID is a fixed artifact or event id of the replica tests.
func replicaID(name string) uuid.UUID {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("loci-replica-test/"+name))
}

// replicaTime is a fixed write time, i seconds after a fixed instant.
func replicaTime(i int) time.Time {
	return time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
}

// replicaText is a deterministic text of n words; long texts make several spans.
func replicaText(seed, n int) string {
	words := []string{"deploy", "postgres", "migration", "rollback", "latency", "budget", "alice", "cache",
		"invoice", "kafka", "schema", "retry", "quota", "tenant", "backup", "vector", "index", "ledger"}
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[(seed*7+i*i+i*seed)%len(words)])
		if i%13 == 12 {
			b.WriteByte('.')
		}
	}
	return b.String()
}

// replicaInput is artifact i of workspace ws with a fixed id and ingest time;
// every third one has no timestamp of its own (it defaults to the ingest
// time), and long ones make several spans.
func replicaInput(ws string, i int) IngestInput {
	words := 20 + (i%4)*150
	in := IngestInput{Workspace: ws, ActorID: fmt.Sprint("actor", i%3), Type: "chat_turn",
		Payload:    []byte(fmt.Sprintf(`{"role":"user","content":%q}`, replicaText(i, words))),
		ArtifactID: replicaID(fmt.Sprint(ws, "/", i)), IngestedAt: replicaTime(100 + i),
		Metadata: map[string]string{"n": fmt.Sprint(i), "ws": ws}}
	if i%3 != 0 {
		in.Timestamp = replicaTime(i * 10)
	}
	return in
}

// replicaWrites applies the test's write sequence to db and returns a
// transcript of what each write returned.
func replicaWrites(t *testing.T, db *DB) []string {
	t.Helper()
	const tenant = "t"
	var log []string
	note := func(format string, args ...any) { log = append(log, fmt.Sprintf(format, args...)) }
	ingest := func(in IngestInput) IngestResult {
		t.Helper()
		r, err := db.Ingest(tenant, in)
		if err != nil {
			t.Fatalf("ingest %s: %v", in.ArtifactID, err)
		}
		note("ingest %+v", r)
		return r
	}
	feedback := func(in FeedbackInput) {
		t.Helper()
		r, err := db.Feedback(tenant, in)
		if err != nil {
			t.Fatalf("feedback %+v: %v", in, err)
		}
		note("feedback %+v", r)
	}

	var batch []IngestInput
	for i := 0; i < 6; i++ {
		batch = append(batch, replicaInput("a", i))
	}
	res, err := db.IngestBatch(tenant, batch)
	if err != nil {
		t.Fatal(err)
	}
	note("batch %+v", res)
	var b []IngestResult
	for i := 0; i < 5; i++ {
		in := replicaInput("b", i)
		in.IdempotencyKey = fmt.Sprint("key-", i)
		b = append(b, ingest(in))
	}
	again := replicaInput("b", 2)
	again.IdempotencyKey = "key-2"
	again.IngestedAt = replicaTime(999) // a retry at a later time returns the stored artifact
	if r := ingest(again); !r.Replayed || r.ArtifactID != b[2].ArtifactID {
		t.Fatalf("retry by idempotency key: %+v, want the stored %s", r, b[2].ArtifactID)
	}
	feedback(FeedbackInput{Workspace: "a", ActorID: "actor1", Action: ActionPin, ArtifactID: res[1].ArtifactID,
		SpanID: res[1].SpanIDs[0], ID: replicaID("fb1"), CreatedAt: replicaTime(200)})
	feedback(FeedbackInput{Workspace: "b", ActorID: "actor2", Action: ActionMarkWrong, ArtifactID: b[3].ArtifactID,
		Reason: "stale", ID: replicaID("fb2"), CreatedAt: replicaTime(201)})
	if _, err := db.EraseArtifact(tenant, res[4].ArtifactID); err != nil {
		t.Fatal(err)
	}
	note("erased %s", res[4].ArtifactID)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 6; i < 10; i++ {
		ingest(replicaInput("a", i))
	}
	for i := 0; i < 3; i++ {
		ingest(replicaInput("c", i))
	}
	if _, err := db.EraseWorkspace(tenant, "c"); err != nil {
		t.Fatal(err)
	}
	note("erased workspace c")
	feedback(FeedbackInput{Workspace: "a", ActorID: "actor0", Action: ActionOutdated, ArtifactID: res[0].ArtifactID,
		ID: replicaID("fb3"), CreatedAt: replicaTime(300)})
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EraseArtifact(tenant, b[0].ArtifactID); err != nil { // in a segment now
		t.Fatal(err)
	}
	note("erased %s", b[0].ArtifactID)
	for i := 10; i < 12; i++ {
		ingest(replicaInput("a", i)) // stays in the head until the last flush
	}
	ingest(replicaInput("c", 7)) // the erased workspace is written again
	return log
}

// replicaReads renders everything a reader can ask of the test's
// workspaces; two engines in the same state render the same text.
func replicaReads(t *testing.T, db *DB) string {
	t.Helper()
	const tenant = "t"
	var out strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
	sums, err := db.Workspaces(tenant)
	if err != nil {
		t.Fatal(err)
	}
	p("workspaces %+v", sums)
	for _, ws := range []string{"a", "b", "c"} {
		p("== %s data version %d", ws, db.DataVersion(tenant, ws))
		q := ListQuery{Limit: 4}
		for page := 0; ; page++ {
			lp, err := db.ListArtifacts(tenant, ws, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range lp.Artifacts {
				p("page %d: %+v", page, *a)
				full, err := db.Artifact(tenant, a.ID)
				if err != nil {
					t.Fatalf("Artifact(%s): %v", a.ID, err)
				}
				p("artifact %+v", *full)
				spans, err := db.ArtifactSpans(tenant, a.ID)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range spans {
					if want := SpanID(a.ID, s.Ordinal); s.ID != want {
						t.Errorf("span %d of %s has id %s, want %s", s.Ordinal, a.ID, s.ID, want)
					}
					p("span %+v", s)
				}
			}
			if !lp.More {
				break
			}
			q.After, q.HasAfter = Position(lp.Artifacts[len(lp.Artifacts)-1]), true
		}
		marks, pinned := db.Marks(tenant, ws)
		p("marks %v pinned %v", marks, pinned)
		for _, query := range []string{"postgres migration", "rollback latency budget", "kafka", "tenant quota backup"} {
			lex, err := db.SearchLexical(tenant, ws, query, 20)
			if err != nil {
				t.Fatal(err)
			}
			sem, err := searchSemantic(db, tenant, ws, query, 20)
			if err != nil {
				t.Fatal(err)
			}
			p("lexical %q: %+v", query, lex)
			p("semantic %q: %+v", query, sem)
		}
	}
	return out.String()
}

// segmentFiles returns the name and bytes of every segment file of dir.
func segmentFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	return globFiles(t, filepath.Join(dir, segmentDir, "*.seg"))
}

// globFiles returns the name and bytes of every file matching pattern.
func globFiles(t *testing.T, pattern string) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(n)] = b
	}
	return out
}

// sameSegments fails unless the segment files and manifests of two
// directories have the same names and bytes.
func sameSegments(t *testing.T, when, dirA, dirB string) {
	t.Helper()
	a, b := segmentFiles(t, dirA), segmentFiles(t, dirB)
	if len(a) == 0 {
		t.Fatalf("%s: no segment files in %s", when, dirA)
	}
	maps.Copy(a, globFiles(t, filepath.Join(dirA, manifest.FileName)))
	maps.Copy(b, globFiles(t, filepath.Join(dirB, manifest.FileName)))
	var names []string
	for n := range a {
		names = append(names, n)
	}
	slices.Sort(names)
	for n := range b {
		if _, ok := a[n]; !ok {
			t.Errorf("%s: segment %s only in the second directory", when, n)
		}
	}
	for _, n := range names {
		y, ok := b[n]
		switch {
		case !ok:
			t.Errorf("%s: segment %s only in the first directory", when, n)
		case !bytes.Equal(a[n], y):
			at := 0
			for at < min(len(a[n]), len(y)) && a[n][at] == y[at] {
				at++
			}
			t.Errorf("%s: segment %s differs (%d and %d bytes, first difference at offset %d)", when, n, len(a[n]), len(y), at)
		}
	}
}

// TestReplicasIdentical applies the same writes, with fixed artifact ids,
// ingest times, feedback ids and times, to two engines in different
// directories: every read gives the same answer, before and after flushes,
// compaction and a restart, and the segment files and manifests are
// byte-identical.
func TestReplicasIdentical(t *testing.T) {
	dirs := [2]string{t.TempDir(), t.TempDir()}
	opts := func(i int) Options {
		// Different clocks: nothing the engines store may come from them.
		skew := time.Duration(i) * 37 * time.Hour
		return Options{DisableBackground: true, CompactionMinSegments: 2,
			Now: func() time.Time { return time.Now().Add(skew) }}
	}
	var dbs [2]*DB
	var logs [2][]string
	for i := range dbs {
		dbs[i] = openTest(t, dirs[i], opts(i))
		logs[i] = replicaWrites(t, dbs[i])
	}
	if !slices.Equal(logs[0], logs[1]) {
		t.Fatalf("the writes returned different results:\n%s\n--- and ---\n%s", strings.Join(logs[0], "\n"), strings.Join(logs[1], "\n"))
	}
	same := func(when string) {
		t.Helper()
		a, b := replicaReads(t, dbs[0]), replicaReads(t, dbs[1])
		if a != b {
			t.Fatalf("%s: reads differ:\n%s\n--- and ---\n%s", when, a, b)
		}
	}
	same("with a head")
	for _, db := range dbs {
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	same("flushed")
	sameSegments(t, "flushed", dirs[0], dirs[1])
	for _, db := range dbs {
		if err := db.Compact(); err != nil {
			t.Fatal(err)
		}
	}
	same("compacted")
	sameSegments(t, "compacted", dirs[0], dirs[1])
	for i, db := range dbs {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		dbs[i] = openTest(t, dirs[i], opts(i))
	}
	t.Cleanup(func() {
		for _, db := range dbs {
			db.Close()
		}
	})
	same("reopened")
	if got := dbs[0].DataVersion("t", "a"); got == 0 {
		t.Fatal("workspace a has no data version")
	}
}

// TestSpanIDsFixedByArtifactID checks the span id rule: the ids are those
// SpanID derives from the artifact id and ordinal, the same in another
// engine, and distinct across artifacts.
func TestSpanIDsFixedByArtifactID(t *testing.T) {
	in := replicaInput("ws", 3) // a long text: several spans
	r1 := mustIngest(t, openTest(t, t.TempDir(), Options{DisableBackground: true, NoEmbedder: true}), "t", in)
	r2 := mustIngest(t, openTest(t, t.TempDir(), Options{DisableBackground: true, NoEmbedder: true}), "t", in)
	if len(r1.SpanIDs) < 2 || !slices.Equal(r1.SpanIDs, r2.SpanIDs) {
		t.Fatalf("span ids %v and %v, want the same, at least two", r1.SpanIDs, r2.SpanIDs)
	}
	seen := map[uuid.UUID]bool{}
	for i, id := range r1.SpanIDs {
		if id != SpanID(in.ArtifactID, uint32(i)) || id.Version() != 5 {
			t.Errorf("span %d: id %s, want the version 5 id %s", i, id, SpanID(in.ArtifactID, uint32(i)))
		}
		seen[id] = true
	}
	// Without a given artifact id the artifact id is random, so are the spans'.
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, NoEmbedder: true})
	in.ArtifactID = uuid.Nil
	for i := 0; i < 2; i++ {
		r := mustIngest(t, db, "t", in)
		for j, id := range r.SpanIDs {
			if seen[id] || id != SpanID(r.ArtifactID, uint32(j)) {
				t.Fatalf("span %d of %s: id %s repeats or is not derived from the artifact id", j, r.ArtifactID, id)
			}
			seen[id] = true
		}
	}
	// A fixed vector keeps the rule from changing unnoticed: stored ids
	// derive from it.
	if got, want := SpanID(uuid.MustParse("00112233-4455-6677-8899-aabbccddeeff"), 7).String(), "4ddb3639-ec7c-51b1-acd6-af49f2821702"; got != want {
		t.Errorf("SpanID of the fixed vector = %s, want %s", got, want)
	}
}

// TestIngestedAt checks IngestInput.IngestedAt: it is the created time and
// the default timestamp, whatever the engine's clock, and a time
// outside years 2000 to 9999 is refused naming the field.
func TestIngestedAt(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true, NoEmbedder: true,
		Now: func() time.Time { return time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC) }})
	at := time.Date(2026, 2, 3, 4, 5, 6, 789000, time.FixedZone("x", 3600))
	in := chat("ws", "given ingest time")
	in.Timestamp, in.IngestedAt = time.Time{}, at
	r := mustIngest(t, db, "t", in)
	a, err := db.Artifact("t", r.ArtifactID)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Created.Equal(at) || a.IngestedAt != at.UnixMicro() || a.Timestamp != at.UnixMicro() {
		t.Errorf("created %v, ingested_at %d, timestamp %d; want all %v", r.Created, a.IngestedAt, a.Timestamp, at)
	}
	r = mustIngest(t, db, "t", chat("ws", "engine clock"))
	if want := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC); !r.Created.Equal(want) {
		t.Errorf("without IngestedAt: created %v, want the engine's clock %v", r.Created, want)
	}
	for _, bad := range []time.Time{time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC), time.Unix(0, 0), maxWriteTime} {
		in := chat("ws", "bad time")
		in.IngestedAt = bad
		_, err := db.Ingest("t", in)
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != "IngestedAt" {
			t.Errorf("IngestedAt %v: err %v, want an InvalidError on IngestedAt", bad, err)
		}
		_, err = db.Feedback("t", FeedbackInput{Workspace: "ws", Action: ActionPin, ArtifactID: r.ArtifactID, CreatedAt: bad})
		if !errors.As(err, &inv) || inv.Field != "CreatedAt" {
			t.Errorf("feedback CreatedAt %v: err %v, want an InvalidError on CreatedAt", bad, err)
		}
	}
	if _, err := db.Ingest("t", IngestInput{Workspace: "ws", ActorID: "a", Type: "chat_turn", IngestedAt: minWriteTime}); err != nil {
		t.Errorf("IngestedAt at minWriteTime: %v", err)
	}
}

// TestSeqIsNodeGlobal pins down what the cluster design must change (see
// docs/architecture.md, Write path): an artifact's Seq, and so the
// workspace's data version, is the engine's WAL sequence number, shared by
// every record of the node. A receipt (stored by every pack) and a write to
// another workspace each take one, so two engines applying the same writes
// to a workspace give them different Seqs and data versions when one of them
// also served a pack or holds another workspace. Ids, contents, listing
// order and search results stay the same; listing cursors, data versions
// (and so receipt ids) and the segment bytes differ.
func TestSeqIsNodeGlobal(t *testing.T) {
	const tenant = "t"
	dirs := [2]string{t.TempDir(), t.TempDir()}
	var dbs [2]*DB
	for i := range dbs {
		dbs[i] = openTest(t, dirs[i], Options{DisableBackground: true, NoEmbedder: true})
		defer dbs[i].Close()
	}
	x := replicaInput("ws", 1)
	for _, db := range dbs {
		mustIngest(t, db, tenant, x)
	}
	v0 := dbs[1].DataVersion(tenant, "ws")
	// Node 0 serves a pack: its receipt takes a WAL seq but does not move the
	// workspace's data version.
	err := dbs[0].StoreReceipt(Receipt{ID: replicaID("receipt"), Tenant: tenant, Workspace: "ws", Query: "q", ActorID: "a",
		PackHash: "sha256:00", Timestamp: replicaTime(0).UnixMicro(), Body: []byte(`{"receipt":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if v := dbs[0].DataVersion(tenant, "ws"); v != v0 {
		t.Fatalf("a receipt moved the data version from %d to %d", v0, v)
	}
	y := replicaInput("ws", 2)
	for _, db := range dbs {
		mustIngest(t, db, tenant, y)
	}
	a0, _ := dbs[0].Artifact(tenant, y.ArtifactID)
	a1, _ := dbs[1].Artifact(tenant, y.ArtifactID)
	if a0.Seq != a1.Seq+1 || dbs[0].DataVersion(tenant, "ws") != dbs[1].DataVersion(tenant, "ws")+1 {
		t.Fatalf("after a receipt on node 0: seq %d and %d, data version %d and %d; want node 0 one ahead",
			a0.Seq, a1.Seq, dbs[0].DataVersion(tenant, "ws"), dbs[1].DataVersion(tenant, "ws"))
	}
	if Position(a0) == Position(a1) {
		t.Fatal("listing positions (cursors) are equal; they hold the seq")
	}
	s0, _ := dbs[0].ArtifactSpans(tenant, y.ArtifactID)
	s1, _ := dbs[1].ArtifactSpans(tenant, y.ArtifactID)
	if fmt.Sprint(s0) != fmt.Sprint(s1) {
		t.Fatalf("spans differ:\n%v\n%v", s0, s1)
	}
	// The segments differ: node 0's holds the receipt, and the artifact
	// rows hold their seqs.
	for _, db := range dbs {
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	a, b := segmentFiles(t, dirs[0]), segmentFiles(t, dirs[1])
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("%d and %d segments, want one each", len(a), len(b))
	}
	for n := range a {
		if bytes.Equal(a[n], b[n]) {
			t.Fatal("segments are byte-identical; node 0's holds a receipt and other seqs")
		}
	}
	// Node 1 also holds another workspace (another shard, in a cluster).
	mustIngest(t, dbs[1], tenant, replicaInput("other", 1))
	mustIngest(t, dbs[1], tenant, replicaInput("other", 2))
	z := replicaInput("ws", 3)
	for _, db := range dbs {
		mustIngest(t, db, tenant, z)
	}
	if v0, v1 := dbs[0].DataVersion(tenant, "ws"), dbs[1].DataVersion(tenant, "ws"); v1 != v0+1 {
		t.Fatalf("after two writes to another workspace on node 1: data versions %d and %d, want node 1 one ahead", v0, v1)
	}
	for _, q := range []string{"postgres migration", "kafka schema"} {
		h0, err0 := dbs[0].SearchLexical(tenant, "ws", q, 10)
		h1, err1 := dbs[1].SearchLexical(tenant, "ws", q, 10)
		if err0 != nil || err1 != nil || len(h0) == 0 || fmt.Sprint(h0) != fmt.Sprint(h1) {
			t.Fatalf("search %q: %v (%v) and %v (%v), want the same hits", q, h0, err0, h1, err1)
		}
	}
}
