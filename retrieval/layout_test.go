package retrieval

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/vecindex"
)

// snapshot is everything readable about a set of workspaces, search
// results included.
type snapshot map[string]struct {
	Artifacts []artifact.Artifact
	Spans     []artifact.Span
	Lexical   [][]engine.SearchHit
	Semantic  [][]engine.SearchHit
	Version   uint64
	Marks     []string // per span in listing order: its feedback marks
	Pinned    []int    // positions of pinned spans in the listing, in prefix order
	Packs     []string // context pack results (JSON) and receipt ids, per query
}

// nonEmptySearches counts snapshots whose searches found something, so the
// property cannot pass by comparing empty result lists.
var nonEmptySearches int

var layoutQueries = []string{"deploy budget Friday", "refund meeting approved", "東京 café 🙂", "cluster 4000 rejected deploy"}

func takeSnapshot(t *testing.T, db *engine.DB, tenants, workspaces []string) snapshot {
	t.Helper()
	s := snapshot{}
	for _, tn := range tenants {
		for _, ws := range workspaces {
			arts, spans, err := db.WorkspaceContent(tn, ws)
			if err != nil {
				t.Fatal(err)
			}
			e := s[tn+"/"+ws]
			for _, a := range arts {
				byID, err := db.Artifact(tn, a.ID)
				if err != nil {
					t.Fatalf("Artifact(%s): %v", a.ID, err)
				}
				if !reflect.DeepEqual(byID, a) {
					t.Fatalf("Artifact(%s) differs from the workspace listing", a.ID)
				}
				as, err := db.ArtifactSpans(tn, a.ID)
				if err != nil {
					t.Fatal(err)
				}
				if len(as) == 0 {
					as = nil
				}
				var want []artifact.Span
				for _, sp := range spans {
					if sp.ArtifactID == a.ID {
						want = append(want, sp)
					}
				}
				if !reflect.DeepEqual(as, want) {
					t.Fatalf("ArtifactSpans(%s) differs from the workspace listing", a.ID)
				}
				e.Artifacts = append(e.Artifacts, *a)
			}
			e.Spans = spans
			e.Version = db.DataVersion(tn, ws)
			marks, pinned := db.Marks(tn, ws)
			pos := map[[16]byte]int{}
			for i, sp := range spans {
				pos[sp.ID] = i
				m := marks[sp.ID]
				m.ArtifactID = [16]byte{} // differs between databases; the span position says where it is
				e.Marks = append(e.Marks, fmt.Sprintf("%+v", m))
			}
			for _, id := range pinned {
				e.Pinned = append(e.Pinned, pos[id])
			}
			for _, q := range layoutQueries {
				lex, err := db.SearchLexical(tn, ws, q, 20)
				if err != nil {
					t.Fatal(err)
				}
				sem, err := SearchSemantic(context.Background(), db, tn, ws, q, 20)
				if err != nil {
					t.Fatal(err)
				}
				if len(lex) > 0 && len(sem) > 0 {
					nonEmptySearches++
				}
				pr, err := New(db).ContextPack(context.Background(), tn, PackRequest{Workspace: ws, Query: q, MaxTokens: 300, ActorID: "actor-1"})
				if err != nil {
					t.Fatal(err)
				}
				body, _ := json.Marshal(pr.Result)
				e.Packs = append(e.Packs, string(body)+"|"+pr.ReceiptID.String())
				e.Lexical = append(e.Lexical, lex)
				e.Semantic = append(e.Semantic, sem)
			}
			s[tn+"/"+ws] = e
		}
	}
	return s
}

// op is one step of a random history.
type op struct {
	Kind   int // 0-6 ingest, 7 flush, 8 compact, 9 erase, 10-11 feedback
	Tenant int
	WS     int
	Seed   uint64
	Key    int // idempotency key number, -1 for none
}

func genOp() gopter.Gen {
	return gopter.CombineGens(gen.IntRange(0, 11), gen.IntRange(0, 1), gen.IntRange(0, 2), gen.UInt64(), gen.IntRange(-1, 5)).
		Map(func(v []any) op { return op{v[0].(int), v[1].(int), v[2].(int), v[3].(uint64), v[4].(int)} })
}

var (
	layoutTenants    = []string{"acme", "globex"}
	layoutWorkspaces = []string{"ws-a", "ws-b", "ws-c"}
)

func randomInput(ws string, seed uint64, key int) engine.IngestInput {
	if key >= 0 {
		// One idempotency key names one artifact (another one under the
		// same key is refused): a keyed input is a function of its key.
		seed = uint64(key) * 0x9e3779b97f4a7c15
	}
	r := rand.New(rand.NewPCG(seed, 7))
	vocab := []string{"deploy", "budget", "Friday", "approved", "rejected", "cluster", "refund", "meeting", "4000", "3.5", "café", "東京", "🙂"}
	var content string
	for i := 0; i < 5+r.IntN(400); i++ {
		content += vocab[r.IntN(len(vocab))]
		if r.IntN(12) == 0 {
			content += ". "
		} else {
			content += " "
		}
	}
	types := []string{"chat_turn", "note", "document", "tool_result"}
	in := engine.IngestInput{Workspace: ws, ActorID: fmt.Sprintf("actor-%d", r.IntN(3)), Type: types[r.IntN(len(types))],
		Payload:   []byte(fmt.Sprintf(`{"role":"user","title":"t%d","content":%q,"tool_name":"x","result":{"n":%d}}`, seed%100, content, seed%1000)),
		Timestamp: time.Unix(1_700_000_000+int64(seed%1_000_000), 0), SessionID: fmt.Sprintf("s%d", seed%3),
		Permissions: artifact.Permissions{Visibility: "restricted", AllowedActors: []string{"actor-1"}, RBACTags: []string{"eng"}}}
	if key >= 0 {
		in.IdempotencyKey = fmt.Sprintf("key-%d", key)
	}
	return in
}

// TestLayoutIndependence: the same data reads back identically from the head
// only, after flushes, after compaction and after restart, whatever the
// history of flushes, compactions and erasures that led there.
func TestLayoutIndependence(t *testing.T) {
	layoutProperty(t, 12, 20261121)
}

// TestLayoutIndependenceIVF is TestLayoutIndependence with the semantic
// channel searching IVF (test centroids for the GloVe embedder: the
// embeddings of 8 of the histories' words, IVF from one span, 2 lists
// probed): its candidates must not depend on the layout either. It also
// checks that IVF was in use: some semantic top k differs from the exact
// scan's.
func TestLayoutIndependenceIVF(t *testing.T) {
	emb := glove.New()
	cents, err := emb.Embed(context.Background(), []string{"deploy", "budget", "Friday", "approved", "rejected", "cluster", "refund", "meeting"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := vecindex.NewCentroids(emb.Model(), cents)
	if err != nil {
		t.Fatal(err)
	}
	defer vecindex.UseCentroids(c, 1, 2)()
	layoutProperty(t, 8, 20261128)

	// IVF was in use: over a workspace of random texts, some query's
	// semantic hits are not the exact scan's.
	db := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true})
	defer db.Close()
	for i := range 200 {
		if _, err := db.Ingest("acme", randomInput("ws", uint64(i), -1)); err != nil {
			t.Fatal(err)
		}
	}
	differ := false
	for _, q := range layoutQueries {
		ivf, err := SearchSemantic(context.Background(), db, "acme", "ws", q, 20)
		if err != nil {
			t.Fatal(err)
		}
		q8, qs, err := quantizedQuery(context.Background(), emb, q)
		if err != nil {
			t.Fatal(err)
		}
		var exact []vecindex.Hit
		if err := db.View("acme", "ws", func(v *engine.View) error {
			parts, _ := v.VectorParts()
			exact = vecindex.Search(parts, q8, qs, 20)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(ivf) != len(exact) {
			differ = true
			continue
		}
		for i := range ivf {
			differ = differ || ivf[i].Score != exact[i].Score
		}
	}
	if !differ {
		t.Fatal("IVF gave the exact scan's hits for every query: it was not in use")
	}
}

// layoutProperty checks the layout property over n random histories.
func layoutProperty(t *testing.T, n int, seed int64) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = n
	params.Rng.Seed(seed)
	props := gopter.NewProperties(params)
	props.Property("reads do not depend on layout", prop.ForAll(func(ops []op) bool {
		dir := t.TempDir()
		db := enginetest.Open(t, dir, engine.Options{DisableBackground: true})
		headOnly := enginetest.Open(t, t.TempDir(), engine.Options{DisableBackground: true})
		defer func() { db.Close(); headOnly.Close() }()
		for _, o := range ops {
			tn, ws := layoutTenants[o.Tenant], layoutWorkspaces[o.WS]
			switch {
			case o.Kind <= 6:
				in := randomInput(ws, o.Seed, o.Key)
				r1, err1 := db.Ingest(tn, in)
				r2, err2 := headOnly.Ingest(tn, in)
				if err1 != nil || err2 != nil || r1.Replayed != r2.Replayed {
					t.Logf("ingest: %v %v replay %v %v", err1, err2, r1.Replayed, r2.Replayed)
					return false
				}
			case o.Kind == 7:
				if err := db.Flush(); err != nil {
					t.Log(err)
					return false
				}
			case o.Kind == 8:
				if err := db.Compact(); err != nil {
					t.Log(err)
					return false
				}
			case o.Kind >= 10:
				// The same feedback in both: the artifact and span at the same
				// position of the listing, which is the same in both.
				if err := sameFeedback(db, headOnly, tn, ws, o.Seed); err != nil {
					t.Log(err)
					return false
				}
			default:
				e1, err1 := db.EraseWorkspace(tn, ws)
				e2, err2 := headOnly.EraseWorkspace(tn, ws)
				if err1 != nil || err2 != nil || e1 != e2 {
					t.Logf("erase: %v %v %+v %+v", err1, err2, e1, e2)
					return false
				}
			}
		}
		// ids, hashes and times differ between the two databases; compare
		// each against itself across layouts, and the two on content.
		want := takeSnapshot(t, db, layoutTenants, layoutWorkspaces)
		if !sameContent(want, takeSnapshot(t, headOnly, layoutTenants, layoutWorkspaces)) {
			t.Log("segment-backed and head-only databases hold different content")
			return false
		}
		steps := []struct {
			name string
			do   func() error
		}{
			{"flush", func() error { return db.Flush() }},
			{"compact", func() error { return db.Compact() }},
			{"restart", func() error {
				db.Close()
				var err error
				db, err = enginetest.OpenErr(dir, engine.Options{DisableBackground: true, Logger: enginetest.Quiet()})
				return err
			}},
			{"compact after restart", func() error { return db.Compact() }},
		}
		for _, s := range steps {
			if err := s.do(); err != nil {
				t.Logf("%s: %v", s.name, err)
				return false
			}
			if got := takeSnapshot(t, db, layoutTenants, layoutWorkspaces); !reflect.DeepEqual(got, want) {
				t.Logf("reads changed after %s", s.name)
				return false
			}
		}
		return true
	}, gen.SliceOfN(40, genOp())))
	props.TestingRun(t)
	if nonEmptySearches == 0 {
		t.Fatal("no search found anything: the property compared empty results")
	}
	t.Logf("%d non-empty search snapshots compared", nonEmptySearches)
}

// sameFeedback gives one random feedback event to both databases: the
// action, artifact and span are picked by position from seed.
func sameFeedback(a, b *engine.DB, tn, ws string, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 11))
	actions := []string{engine.ActionPin, engine.ActionPin, engine.ActionUnpin, engine.ActionPrivate, engine.ActionMarkWrong, engine.ActionOutdated, engine.ActionClear}
	action := actions[r.IntN(len(actions))]
	artsA, spansA, _ := a.WorkspaceContent(tn, ws)
	artsB, spansB, _ := b.WorkspaceContent(tn, ws)
	if len(artsA) == 0 || len(artsA) != len(artsB) {
		return nil
	}
	i := r.IntN(len(artsA))
	pick := func(arts []*artifact.Artifact, spans []artifact.Span) engine.FeedbackInput {
		in := engine.FeedbackInput{Workspace: ws, ActorID: "actor-1", Action: action, ArtifactID: arts[i].ID, Reason: "layout"}
		var own []artifact.Span
		for _, sp := range spans {
			if sp.ArtifactID == arts[i].ID {
				own = append(own, sp)
			}
		}
		if len(own) > 0 && seed%3 != 0 { // else: the whole artifact
			in.SpanID = own[int(seed/3)%len(own)].ID
		}
		return in
	}
	_, errA := a.Feedback(tn, pick(artsA, spansA))
	_, errB := b.Feedback(tn, pick(artsB, spansB))
	if (errA == nil) != (errB == nil) {
		return fmt.Errorf("feedback: %v vs %v", errA, errB)
	}
	return nil
}

// sameContent compares two snapshots ignoring ids, seqs and ingest times.
func sameContent(a, b snapshot) bool {
	norm := func(s snapshot) map[string][]string {
		out := map[string][]string{}
		for k, v := range s {
			for _, x := range v.Artifacts {
				out[k] = append(out[k], fmt.Sprintf("%s|%s|%x|%d|%s", x.Type, x.ActorID, x.ContentHash, x.Timestamp, x.IdempotencyKey))
			}
			for _, sp := range v.Spans {
				out[k] = append(out[k], fmt.Sprintf("%d|%d|%d|%d|%s", sp.Ordinal, sp.Start, sp.End, sp.Tokens, sp.Text))
			}
			out[k] = append(out[k], fmt.Sprint("version|", v.Version, "|pinned|", v.Pinned))
			out[k] = append(out[k], v.Marks...)
			// Span ids differ between the two databases, so equal scores may
			// tie-break differently: compare each result list's scores.
			for i := range v.Lexical {
				for _, h := range v.Lexical[i] {
					out[k] = append(out[k], fmt.Sprintf("lex%d|%v", i, h.Score))
				}
				for _, h := range v.Semantic[i] {
					out[k] = append(out[k], fmt.Sprintf("sem%d|%v", i, h.Score))
				}
			}
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
