package retrieval

// Determinism across re-ingestion: the same writes, in the same order, into
// fresh data directories give packs that are equal in everything but the
// ids the engine drew (artifact, span, receipt and conflict ids, and the
// pack hash, which covers the citations' ids). Span ids are random, so
// anything that still broke ties on them would show up as packs that differ
// between directories.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/pack"
)

// contentPack is a pack with every engine-drawn id replaced by the name of
// the span it stands for: "a<i>s<j>", span j of the i-th input.
type contentPack struct {
	ContextText string
	Confidence  float64
	Abstain     bool
	Reason      string
	Tokens      int
	Citations   []string // per citation: span name, offsets, content hash, source type, score, pinned
	Exclusions  []string // per exclusion: span name, reason, detail (ids replaced), score
	Conflicts   []string // per conflict: the two span names and the description
	Channels    string
}

// spanNames maps each stored span id (and artifact id) to its name.
func spanNames(res []engine.IngestResult) map[string]string {
	names := map[string]string{}
	for i, r := range res {
		names[r.ArtifactID.String()] = fmt.Sprintf("a%d", i)
		for j, id := range r.SpanIDs {
			names[id.String()] = fmt.Sprintf("a%ds%d", i, j)
		}
	}
	return names
}

// byContent projects r onto what must not depend on the ids drawn.
func byContent(r *pack.Result, names map[string]string) contentPack {
	name := func(id uuid.UUID) string {
		if n, ok := names[id.String()]; ok {
			return n
		}
		return "unknown:" + id.String()
	}
	rename := func(s string) string {
		for id, n := range names {
			s = strings.ReplaceAll(s, id, n)
		}
		return s
	}
	cp := contentPack{ContextText: r.ContextText, Confidence: r.Confidence, Abstain: r.Abstain, Reason: r.AbstainReason,
		Tokens: r.TotalTokens}
	for _, c := range r.Citations {
		cp.Citations = append(cp.Citations, fmt.Sprintf("%d %s %d-%d %s %s %.6f %v", c.Index, name(c.SpanID), c.StartOffset,
			c.EndOffset, c.ContentHash, c.SourceType, c.RelevanceScore, c.Pinned))
	}
	for _, e := range r.Exclusions {
		cp.Exclusions = append(cp.Exclusions, fmt.Sprintf("%s %s %q %.6f", name(e.SpanID), e.Reason, rename(e.Detail), e.RelevanceScore))
	}
	for _, c := range r.Conflicts {
		cp.Conflicts = append(cp.Conflicts, fmt.Sprintf("%s %s %s", name(c.ClaimA.SpanID), name(c.ClaimB.SpanID), c.Description))
	}
	ch, _ := json.Marshal(r.ChannelContributions)
	cp.Channels = string(ch)
	return cp
}

// freshPack ingests ins one by one into a fresh directory, flushing after
// the inputs listed in flushAfter and compacting at the end when compact is
// set, and returns the content projection of the pack for each request.
func freshPack(t *testing.T, ins []engine.IngestInput, reqs []PackRequest, opts engine.Options, flushAfter map[int]bool, compact bool) []contentPack {
	t.Helper()
	opts.DisableBackground, opts.CompactionMinSegments = true, 2
	db := enginetest.Open(t, t.TempDir(), opts)
	defer db.Close()
	res := make([]engine.IngestResult, len(ins))
	for i, in := range ins {
		r, err := db.Ingest("t", in)
		if err != nil {
			t.Fatalf("ingest %d: %v", i, err)
		}
		res[i] = r
		if flushAfter[i] {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if compact {
		if err := db.Compact(); err != nil {
			t.Fatal(err)
		}
	}
	names := spanNames(res)
	out := make([]contentPack, len(reqs))
	for i, req := range reqs {
		pr, err := New(db).ContextPack(context.Background(), "t", req)
		if err != nil {
			t.Fatalf("pack %q: %v", req.Query, err)
		}
		out[i] = byContent(pr.Result, names)
	}
	return out
}

// diffPacks describes the first difference between two content packs, or "".
func diffPacks(a, b contentPack) string {
	if reflect.DeepEqual(a, b) {
		return ""
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return fmt.Sprintf("%s differs:\n%v\n%v", va.Type().Field(i).Name, va.Field(i).Interface(), vb.Field(i).Interface())
		}
	}
	return "differs"
}

// TestDeterminismAcrossDirectories: each case's notes, ingested in the same
// order into ten fresh directories (so with ten different draws of ids),
// give the same pack content every time: context text, citations (which
// span, in which order), exclusions and their reasons, conflicts,
// confidence and abstention.
func TestDeterminismAcrossDirectories(t *testing.T) {
	at := func(minutes int) time.Time {
		return time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(minutes) * time.Minute)
	}
	note := func(typ, actor, content string, minutes int) engine.IngestInput {
		c, _ := json.Marshal(content)
		return engine.IngestInput{Workspace: "ws", ActorID: actor, Type: typ, Timestamp: at(minutes),
			Payload: []byte(fmt.Sprintf(`{"role":"user","title":"","content":%s}`, c))}
	}
	many := func(n int, content func(i int) string, typ func(i int) string) []engine.IngestInput {
		var ins []engine.IngestInput
		for i := range n {
			ins = append(ins, note(typ(i), fmt.Sprintf("u%d", i%3), content(i), 0))
		}
		return ins
	}
	same := func(s string) func(int) string { return func(int) string { return s } }
	cases := []struct {
		name string
		ins  []engine.IngestInput
		reqs []PackRequest
		opts engine.Options
	}{{
		// The case: two notes with the same words tie on every
		// channel; both fit, so the tie decides the citation order.
		name: "two notes that tie",
		ins: []engine.IngestInput{
			note("note", "u1", "The deploy moved to Friday afternoon.", 0),
			note("note", "u1", "Friday afternoon the deploy moved to.", 0),
		},
		reqs: []PackRequest{{Workspace: "ws", Query: "when is the deploy"}},
	}, {
		// Exact duplicates from different sources: redundancy keeps one;
		// which one (its source type is in the citation) must not be luck.
		name: "exact duplicates from different sources",
		ins: []engine.IngestInput{
			note("note", "u1", "The refund window is 30 days for enterprise customers.", 0),
			note("document", "u2", "The refund window is 30 days for enterprise customers.", 0),
			note("email", "u3", "The refund window is 30 days for enterprise customers.", 0),
		},
		reqs: []PackRequest{{Workspace: "ws", Query: "refund window"}, {Workspace: "ws", Query: "refund window", Mode: "coverage"}},
	}, {
		name: "lexical only, ties in the budget",
		ins: []engine.IngestInput{
			note("note", "u1", "Budget approved for the cluster.", 0),
			note("note", "u2", "The cluster budget approved for.", 0),
			note("note", "u3", "For the cluster budget approved.", 0),
			note("document", "u1", "Approved: the budget for the cluster.", 0),
		},
		reqs: []PackRequest{{Workspace: "ws", Query: "cluster budget", MaxTokens: 45},
			{Workspace: "ws", Query: "cluster budget", Profile: pack.ProfileLowLatency, MaxTokens: 60}},
		opts: engine.Options{NoEmbedder: true},
	}, {
		// More equal spans than the channels' pools hold (100 at most for
		// low_latency): the top-k cut itself must break the tie on content.
		name: "ties at the pool cut",
		ins: many(130, func(i int) string {
			return []string{"Quarterly launch exports are enabled.", "Exports are enabled: quarterly launch.",
				"Enabled exports, quarterly launch."}[i%3]
		}, func(i int) string { return []string{"note", "document", "chat_turn", "email"}[i%4] }),
		reqs: []PackRequest{{Workspace: "ws", Query: "quarterly launch exports", Profile: pack.ProfileLowLatency},
			{Workspace: "ws", Query: "quarterly launch exports", MaxTokens: 200},
			{Workspace: "ws", Query: "quarterly launch exports", Mode: "coverage", MaxTokens: 300}},
	}, {
		name: "identical notes at the pool cut",
		ins:  many(120, same("The cluster meeting is on Friday."), func(i int) string { return []string{"note", "email"}[i%2] }),
		reqs: []PackRequest{{Workspace: "ws", Query: "cluster meeting", Profile: pack.ProfileLowLatency},
			{Workspace: "ws", Query: "cluster meeting Friday", ActorID: "u1"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := freshPack(t, tc.ins, tc.reqs, tc.opts, nil, false)
			if len(want[0].Citations) == 0 {
				t.Fatalf("the first request cites nothing; the case tests nothing")
			}
			for dir := 1; dir < 10; dir++ {
				got := freshPack(t, tc.ins, tc.reqs, tc.opts, nil, false)
				for i := range tc.reqs {
					if d := diffPacks(got[i], want[i]); d != "" {
						t.Fatalf("directory %d, request %d (%q): %s", dir, i, tc.reqs[i].Query, d)
					}
				}
			}
		})
	}
}

// rdDoc is one artifact of the re-ingestion property: a text drawn from a
// small set (so exact duplicates and same-word reorderings are common), a
// source type, a creator and a time drawn from a few values (so ties on
// time are common too).
type rdDoc struct {
	Text, Type, Actor, Minute int
}

var rdTexts = []string{
	"The refund window is 30 days.", "The refund window is 45 days.", "30 days is the refund window.",
	"The launch was approved.", "The launch was rejected.", "Approved was the launch.",
	"Exports are enabled for enterprise.", "Enterprise exports are enabled for.",
	"Deploy budget for the cluster meeting on Friday.", "Friday cluster meeting for the deploy budget.",
	"The old plan was replaced by the enterprise plan.", "Quarterly launch, quarterly budget, quarterly users.",
}

func (d rdDoc) input() engine.IngestInput {
	c, _ := json.Marshal(rdTexts[d.Text])
	return engine.IngestInput{Workspace: "ws", ActorID: ppActors[d.Actor], Type: ppTypes[d.Type],
		Payload:   []byte(fmt.Sprintf(`{"role":"user","title":"","content":%s}`, c)),
		Timestamp: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(d.Minute) * time.Minute)}
}

// TestReingestionProperty: random artifacts with many ties (duplicate and
// reordered texts, shared times), ingested in the same order into two
// fresh directories, each flushed at its own random points (and one of them
// compacted), give packs of equal content for random queries, profiles,
// budgets and modes.
func TestReingestionProperty(t *testing.T) {
	compared := 0
	props := gopter.NewProperties(ppParams(25))
	props.Property("same writes, fresh directory: same pack content", prop.ForAll(func(docs []rdDoc, seed uint64) string {
		if len(docs) == 0 {
			return ""
		}
		r := rand.New(rand.NewPCG(seed, 7))
		ins := make([]engine.IngestInput, len(docs))
		for i, d := range docs {
			ins[i] = d.input()
		}
		var reqs []PackRequest
		for range 3 {
			reqs = append(reqs, PackRequest{Workspace: "ws", Query: ppQuery(r), MaxTokens: []int{20, 60, 300, 4096}[r.IntN(4)],
				ActorID: []string{"", "u1", "u2"}[r.IntN(3)], Mode: []string{"", "coverage"}[r.IntN(2)],
				Profile: []string{"", pack.ProfileLowLatency, pack.ProfileBalanced, pack.ProfileHighRecall}[r.IntN(4)]})
		}
		flushes := func() map[int]bool {
			m := map[int]bool{}
			for i := range docs {
				if r.IntN(4) == 0 {
					m[i] = true
				}
			}
			return m
		}
		a := freshPack(t, ins, reqs, engine.Options{}, flushes(), false)
		b := freshPack(t, ins, reqs, engine.Options{}, flushes(), true)
		for i := range reqs {
			if d := diffPacks(a[i], b[i]); d != "" {
				return fmt.Sprintf("request %d %+v: %s", i, reqs[i], d)
			}
			compared += len(a[i].Citations)
		}
		return ""
	}, gen.SliceOf(gen.Struct(reflect.TypeOf(rdDoc{}), map[string]gopter.Gen{
		"Text":   gen.IntRange(0, len(rdTexts)-1),
		"Type":   gen.IntRange(0, len(ppTypes)-1),
		"Actor":  gen.IntRange(0, len(ppActors)-1),
		"Minute": gen.IntRange(0, 3),
	})), gen.UInt64()))
	props.TestingRun(t)
	if compared == 0 {
		t.Fatal("no citations compared")
	}
	t.Logf("%d citations compared", compared)
}
