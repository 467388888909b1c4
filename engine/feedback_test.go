package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestFeedbackActions(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	long := chat("ws", "First sentence about the budget. "+string(make([]byte, 0))+"Second part. Third part about deploys and the cluster budget for Friday.")
	r1, _ := db.Ingest("t", long)
	r2, _ := db.Ingest("t", chat("ws", "another artifact"))
	v0 := db.DataVersion("t", "ws")
	span := r1.SpanIDs[0]
	fb := func(action string, span uuid.UUID, art uuid.UUID) (FeedbackResult, error) {
		return db.Feedback("t", FeedbackInput{Workspace: "ws", ActorID: "bob", Action: action, ArtifactID: art, SpanID: span, Reason: "because"})
	}
	steps := []struct {
		action string
		span   uuid.UUID
		check  func(SpanMarks) bool
	}{
		{ActionPin, span, func(m SpanMarks) bool { return m.Pinned }},
		{ActionPrivate, span, func(m SpanMarks) bool {
			return m.Private && len(m.PrivateFor) == 1 && m.PrivateFor[0] == "bob" && m.Pinned
		}},
		{ActionMarkWrong, span, func(m SpanMarks) bool { return m.MarkedWrong }},
		{ActionOutdated, span, func(m SpanMarks) bool { return m.Outdated && m.OutdatedBy == "marked outdated: because" }},
		{ActionUnpin, span, func(m SpanMarks) bool { return !m.Pinned && m.MarkedWrong }},
		{ActionClear, span, func(m SpanMarks) bool { return m.isZero() }},
	}
	for _, s := range steps {
		res, err := fb(s.action, s.span, r1.ArtifactID)
		if err != nil || res.Applied != 1 || res.Action != s.action {
			t.Fatalf("%s: %+v %v", s.action, res, err)
		}
		marks, _ := db.Marks("t", "ws")
		if !s.check(marks[span]) {
			t.Fatalf("after %s: marks %+v", s.action, marks[span])
		}
	}
	if v := db.DataVersion("t", "ws"); v <= v0 {
		t.Fatalf("feedback did not change the data version: %d -> %d", v0, v)
	}
	// No span: every span of the artifact.
	res, err := fb(ActionPin, uuid.UUID{}, r2.ArtifactID)
	if err != nil || res.Applied != len(r2.SpanIDs) {
		t.Fatalf("artifact-wide pin: %+v %v", res, err)
	}
	_, pinned := db.Marks("t", "ws")
	if len(pinned) != len(r2.SpanIDs) {
		t.Fatalf("pinned %v", pinned)
	}
	// Reads do not change the version.
	v1 := db.DataVersion("t", "ws")
	db.SearchLexical("t", "ws", "budget", 5)
	db.Marks("t", "ws")
	if db.DataVersion("t", "ws") != v1 {
		t.Fatal("a read changed the data version")
	}
	// Errors: unknown action, a span of another artifact, another tenant, another workspace.
	var ie *InvalidError
	if _, err := fb("like", span, r1.ArtifactID); !errors.As(err, &ie) || ie.Field != "Action" {
		t.Fatalf("unknown action: %v", err)
	}
	if _, err := fb(ActionPin, r2.SpanIDs[0], r1.ArtifactID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("span of another artifact: %v", err)
	}
	if _, err := db.Feedback("other", FeedbackInput{Workspace: "ws", ActorID: "x", Action: ActionPin, ArtifactID: r1.ArtifactID}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other tenant: %v", err)
	}
	if _, err := db.Feedback("t", FeedbackInput{Workspace: "ws2", ActorID: "x", Action: ActionPin, ArtifactID: r1.ArtifactID}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other workspace: %v", err)
	}
	// resolve_conflict: the other span becomes outdated.
	a, b := r1.SpanIDs[0], r2.SpanIDs[0]
	if _, err := db.Feedback("t", FeedbackInput{Workspace: "ws", ActorID: "x", Action: ActionResolveConflict, ArtifactID: r1.ArtifactID,
		ConflictID: "c1", ConflictSpans: [2]uuid.UUID{a, b}, PreferredSpanID: uuid.New()}); !errors.As(err, &ie) {
		t.Fatalf("preferred span outside the conflict: %v", err)
	}
	if _, err := db.Feedback("t", FeedbackInput{Workspace: "ws", ActorID: "x", Action: ActionResolveConflict, ArtifactID: r1.ArtifactID,
		ConflictID: "c1", ConflictSpans: [2]uuid.UUID{a, b}, PreferredSpanID: a}); err != nil {
		t.Fatal(err)
	}
	marks, _ := db.Marks("t", "ws")
	if !marks[b].Outdated || marks[a].Outdated {
		t.Fatalf("resolve_conflict: a %+v b %+v", marks[a], marks[b])
	}

	// Durable: the same state after restart (WAL), flush (segment), compaction and restart.
	want, wantPinned := db.Marks("t", "ws")
	wantVersion := db.DataVersion("t", "ws")
	check := func(when string) {
		t.Helper()
		got, gotPinned := db.Marks("t", "ws")
		if len(got) != len(want) || len(gotPinned) != len(wantPinned) || db.DataVersion("t", "ws") != wantVersion {
			t.Fatalf("%s: marks %d/%d pinned %d/%d version %d/%d", when, len(got), len(want), len(gotPinned), len(wantPinned), db.DataVersion("t", "ws"), wantVersion)
		}
		for id, m := range want {
			if g := got[id]; g.Pinned != m.Pinned || g.Outdated != m.Outdated || g.MarkedWrong != m.MarkedWrong || g.OutdatedBy != m.OutdatedBy {
				t.Fatalf("%s: span %s marks %+v, want %+v", when, id, g, m)
			}
		}
		for i := range wantPinned {
			if gotPinned[i] != wantPinned[i] {
				t.Fatalf("%s: pinned order differs", when)
			}
		}
	}
	reopen := func() {
		db.Close()
		db = openTest(t, dir, Options{DisableBackground: true})
	}
	reopen()
	check("restart")
	db.Flush()
	check("flush")
	reopen()
	check("restart after flush")
	db.Ingest("t", chat("ws", "more"))
	db.Feedback("t", FeedbackInput{Workspace: "ws", ActorID: "bob", Action: ActionPin, ArtifactID: r1.ArtifactID, SpanID: span})
	want, wantPinned = db.Marks("t", "ws")
	wantVersion = db.DataVersion("t", "ws")
	db.Flush()
	db.Compact()
	check("compaction")
	reopen()
	check("restart after compaction")

	// Erasure clears the feedback; the version moves forward and stays after compaction.
	db.EraseWorkspace("t", "ws")
	if m, p := db.Marks("t", "ws"); len(m) != 0 || len(p) != 0 {
		t.Fatal("erase kept feedback")
	}
	v := db.DataVersion("t", "ws")
	if v <= wantVersion {
		t.Fatal("erase did not move the version")
	}
	db.Compact()
	reopen()
	if m, _ := db.Marks("t", "ws"); len(m) != 0 || db.DataVersion("t", "ws") != v {
		t.Fatalf("after erase, compaction and restart: %d marks, version %d want %d", len(m), db.DataVersion("t", "ws"), v)
	}
	if st := db.Stats(); st.Tombstones != 1 { // kept as a fence (fence.go)
		t.Fatalf("tombstone dropped: %+v", st)
	}
	db.Close()
}

func TestFeedbackOnlySegmentCompacts(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, Options{DisableBackground: true})
	r, _ := db.Ingest("t", chat("ws", "pin me"))
	db.Flush()
	// A flush holding feedback only, then an erase, then feedback after it.
	db.Feedback("t", FeedbackInput{Workspace: "ws", ActorID: "a", Action: ActionPin, ArtifactID: r.ArtifactID})
	db.Flush()
	db.EraseWorkspace("t", "ws")
	r2, _ := db.Ingest("t", chat("ws", "after"))
	db.Feedback("t", FeedbackInput{Workspace: "ws", ActorID: "a", Action: ActionMarkWrong, ArtifactID: r2.ArtifactID})
	if err := db.Compact(); err != nil { // must terminate
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	m, _ := db.Marks("t", "ws")
	if len(m) != len(r2.SpanIDs) || !m[r2.SpanIDs[0]].MarkedWrong {
		t.Fatalf("marks after erase and compaction: %+v", m)
	}
	db.Close()
	rep, err := Verify(dir)
	if err != nil || len(rep.Faults) != 0 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// TestCloseDuringFeedbackAndPacks: Close while feedback, packs and ingests
// run must return (no operation may wait on the close guard it holds).
func TestCloseDuringFeedbackAndPacks(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	r, err := db.Ingest("t", chat("ws", "the deploy is on Friday"))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	for g := 0; g < 6; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				switch (g + i) % 3 {
				case 0:
					db.Feedback("t", FeedbackInput{Workspace: "ws", ActorID: "a", Action: ActionPin, ArtifactID: r.ArtifactID})
				case 1:
					probePack(context.Background(), db, "t", PackProbe{Workspace: "ws", Query: "deploy", MaxTokens: 100 + i%50})
				default:
					db.Ingest("t", chat("ws", "more text"))
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return while operations were running")
	}
	close(stop)
	for g := 0; g < 6; g++ {
		<-done
	}
}

// TestNestedEnterDuringClose: an operation that enters again while Close is
// waiting for it gets ErrClosed at once instead of waiting on Close, which
// waits on it (a shared RWMutex as the close guard deadlocked here).
func TestNestedEnterDuringClose(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	if err := db.enter(); err != nil { // the outer operation
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	for { // wait until Close is waiting for the outer operation
		db.gateMu.Lock()
		c := db.closed
		db.gateMu.Unlock()
		if c {
			break
		}
		time.Sleep(time.Millisecond)
	}
	inner := make(chan error, 1)
	go func() { inner <- db.enter() }()
	select {
	case err := <-inner:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("nested enter during Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nested enter blocked behind Close")
	}
	select {
	case <-closed:
		t.Fatal("Close returned while an operation was in flight")
	default:
	}
	db.leave()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
