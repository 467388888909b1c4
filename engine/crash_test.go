package engine

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/internal/crashtest"
	"github.com/loci-memory/loci/text"
)

var crashIterations = flag.Int("crash.iterations", 20, "kill points in TestCrashRecovery (raise for a soak run)")

const crashChildEnv = "LOCI_CRASH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir, os.Getenv("LOCI_CRASH_ROUND"))
		return
	}
	if dir := os.Getenv(firstFlushChildEnv); dir != "" {
		firstFlushChild(dir)
		return
	}
	os.Exit(m.Run())
}

// crashPayload is the deterministic content of the artifact with key k, so
// the parent can check every visible artifact byte for byte.
func crashPayload(key string) []byte {
	r := rand.New(rand.NewPCG(uint64(len(key)), uint64(crc(key))))
	var b strings.Builder
	n := 3 + r.IntN(300)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "word%d ", r.IntN(500))
		if r.IntN(15) == 0 {
			b.WriteString("end. ")
		}
	}
	return []byte(fmt.Sprintf(`{"role":"user","content":%q,"key":%q}`, b.String(), key))
}

func crc(s string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// crashChild ingests until killed, printing "ack <key> <id>" after each
// acknowledged ingest. It flushes and compacts constantly (tiny thresholds),
// erases a scratch workspace now and then, and retries earlier keys to check
// idempotency across crashes.
func crashChild(dir, round string) {
	db, err := testOpen(dir, Options{FlushThreshold: 48 << 10, WALFileSize: 64 << 10, CompactionMinSegments: 2, Logger: quietLogger()})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
		mu.Unlock()
	}
	say("ready")
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				ws := "main"
				if w == 5 {
					ws = "scratch"
				}
				key := fmt.Sprintf("r%s-w%d-%d", round, w, i)
				in := IngestInput{Workspace: ws, ActorID: "crash", Type: "chat_turn", Payload: crashPayload(key), IdempotencyKey: key,
					Timestamp: time.Unix(1_700_000_000, 0)}
				if i%7 == 3 {
					// A batch of three, one group commit.
					keys := []string{key, key + "-b", key + "-c"}
					ins := []IngestInput{in, in, in}
					for j := range ins {
						ins[j].IdempotencyKey, ins[j].Payload = keys[j], crashPayload(keys[j])
					}
					res, err := db.IngestBatch("t", ins)
					if err != nil {
						say("error %v", err)
						os.Exit(3)
					}
					for j, r := range res {
						say("ack %s %s %s", ws, keys[j], r.ArtifactID)
					}
					continue
				}
				r, err := db.Ingest("t", in)
				if err != nil {
					say("error %v", err)
					os.Exit(3)
				}
				say("ack %s %s %s", ws, key, r.ArtifactID)
				if w == 4 && i%5 == 0 {
					// Feedback and receipts are durable state too.
					if _, err := db.Feedback("t", FeedbackInput{Workspace: ws, ActorID: "crash", Action: ActionPin, ArtifactID: r.ArtifactID}); err != nil {
						say("error %v", err)
						os.Exit(3)
					}
					say("pinned %s", r.ArtifactID)
					pr, err := probePack(context.Background(), db, "t", PackProbe{Workspace: ws, Query: fmt.Sprintf("word%d end", i%500), MaxTokens: 256})
					if err != nil {
						say("error %v", err)
						os.Exit(3)
					}
					say("receipt %s", pr.ReceiptID)
				}
				if w == 5 && i%40 == 39 {
					if _, err := db.EraseWorkspace("t", "scratch"); err != nil {
						say("error %v", err)
						os.Exit(3)
					}
					say("erased")
				}
			}
		}()
	}
	wg.Wait()
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test starts child processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(20261121, uint64(*crashIterations)))
	acked := map[string]uuid.UUID{} // main-workspace key -> id
	durable := &ackedState{pinned: map[uuid.UUID]bool{}, receipts: map[uuid.UUID]bool{}}
	var totalAcks int
	for round := 0; round < *crashIterations; round++ {
		crashtest.Round(t, []string{crashChildEnv + "=" + dir, fmt.Sprintf("LOCI_CRASH_ROUND=%d", round)},
			time.Duration(20+rng.IntN(280))*time.Millisecond,
			func(l string) { recordAck(t, l, acked, durable, &totalAcks) })
		checkAfterCrash(t, dir, round, acked, durable)
	}
	t.Logf("%d kill points, %d acknowledged artifacts in main, %d pins, %d receipts", *crashIterations, len(acked), len(durable.pinned), len(durable.receipts))
	if len(acked) == 0 {
		t.Fatal("no ingest was acknowledged: the test checked nothing")
	}
}

// ackedState is the acknowledged feedback and receipts of the crash test.
type ackedState struct {
	pinned   map[uuid.UUID]bool // artifacts pinned
	receipts map[uuid.UUID]bool
}

func recordAck(t *testing.T, l string, acked map[string]uuid.UUID, d *ackedState, n *int) {
	f := strings.Fields(l)
	switch {
	case len(f) == 2 && f[0] == "pinned":
		d.pinned[uuid.MustParse(f[1])] = true
	case len(f) == 2 && f[0] == "receipt":
		d.receipts[uuid.MustParse(f[1])] = true
	case len(f) == 4 && f[0] == "ack":
		*n++
		if f[1] != "main" {
			return
		}
		id := uuid.MustParse(f[3])
		if prev, ok := acked[f[2]]; ok && prev != id {
			t.Fatalf("key %s acknowledged as %s and as %s", f[2], prev, id)
		}
		acked[f[2]] = id
	case strings.HasPrefix(l, "error"):
		t.Fatalf("child: %s", l)
	}
}

// checkAfterCrash: verify finds no fault; after recovery every acknowledged
// artifact is present and intact; every visible artifact is whole (payload,
// hash and spans exactly as ingested), none is visible twice.
func checkAfterCrash(t *testing.T, dir string, round int, acked map[string]uuid.UUID, d *ackedState) {
	t.Helper()
	rep, err := Verify(dir)
	if err != nil {
		t.Fatalf("round %d: verify: %v", round, err)
	}
	if len(rep.Faults) > 0 {
		t.Fatalf("round %d: verify faults: %v", round, rep.Faults)
	}
	db := openTest(t, dir, Options{DisableBackground: true})
	defer db.Close()
	for key, id := range acked {
		a, err := db.Artifact("t", id)
		if err != nil {
			t.Fatalf("round %d: acknowledged artifact %s (%s) lost: %v", round, key, id, err)
		}
		if a.IdempotencyKey != key || a.ContentHash != artifact.ContentHash(crashPayload(key)) {
			t.Fatalf("round %d: artifact %s has wrong content", round, key)
		}
	}
	for _, ws := range []string{"main", "scratch"} {
		arts, spans, err := db.WorkspaceContent("t", ws)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		keys := map[string]bool{}
		spansOf := map[uuid.UUID][]artifact.Span{}
		for _, sp := range spans {
			spansOf[sp.ArtifactID] = append(spansOf[sp.ArtifactID], sp)
		}
		for _, a := range arts {
			if keys[a.IdempotencyKey] {
				t.Fatalf("round %d: key %s visible twice", round, a.IdempotencyKey)
			}
			keys[a.IdempotencyKey] = true
			want := crashPayload(a.IdempotencyKey)
			if !bytes.Equal(a.Payload, want) || a.ContentHash != artifact.ContentHash(want) {
				t.Fatalf("round %d: artifact %s half-visible: payload differs", round, a.IdempotencyKey)
			}
			extracted, _ := text.Extract("chat_turn", a.ActorID, want)
			chunks := text.Chunks(extracted, text.O200kBase(), SpanTargetTokens, SpanMaxTokens)
			got := spansOf[a.ID]
			if len(got) != len(chunks) {
				t.Fatalf("round %d: artifact %s has %d spans, want %d", round, a.IdempotencyKey, len(got), len(chunks))
			}
			for i, c := range chunks {
				if got[i].Text != c.Text || int(got[i].Tokens) != c.Tokens {
					t.Fatalf("round %d: artifact %s span %d differs", round, a.IdempotencyKey, i)
				}
			}
		}
	}
	marks, _ := db.Marks("t", "main")
	for art := range d.pinned {
		spans, err := db.ArtifactSpans("t", art)
		if err != nil {
			t.Fatalf("round %d: pinned artifact %s: %v", round, art, err)
		}
		for _, sp := range spans {
			if !marks[sp.ID].Pinned {
				t.Fatalf("round %d: acknowledged pin of %s lost", round, art)
			}
		}
	}
	for id := range d.receipts {
		if _, err := db.GetReceipt("t", id); err != nil {
			t.Fatalf("round %d: acknowledged receipt %s lost: %v", round, id, err)
		}
	}
	// Retrying an acknowledged key after the crash returns the same artifact.
	for key, id := range acked {
		r, err := db.Ingest("t", IngestInput{Workspace: "main", ActorID: "crash", Type: "chat_turn", Payload: crashPayload(key), IdempotencyKey: key})
		if err != nil || !r.Replayed || r.ArtifactID != id {
			t.Fatalf("round %d: retry of %s: %+v %v", round, key, r, err)
		}
		break
	}
}
