package retrieval

import (
	"context"
	"errors"
	"fmt"
	"github.com/RoaringBitmap/roaring/v2"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/pack"
	"github.com/loci-memory/loci/text"
	"github.com/loci-memory/loci/vecindex"
	"github.com/loci-memory/loci/when"
)

// embedQuery returns the quantized query vector, or a degradation note.
func (p *Packer) embedQuery(ctx context.Context, query string) ([]int8, float32, string) {
	q, scale, err := quantizedQuery(ctx, p.db.Embedder(), query)
	if err != nil {
		if !errors.Is(err, embed.ErrUnavailable) {
			p.db.Logger().Warn("retrieval: query embedding failed", "err", err)
		}
		return nil, 0, pack.AssumeNoSemantic
	}
	return q, scale, ""
}

// queryVector is a query's embedding, possibly still being computed.
type queryVector struct {
	done       chan struct{} // closed once the fields are set
	q8         []int8        // nil: no semantic channel (see assumption)
	scale      float32
	assumption string
}

// startQueryEmbedding embeds the query: on its own goroutine when the
// embedder computes in this process (embed.InProcess), so that it
// overlaps with the lexical search; otherwise before returning.
func (p *Packer) startQueryEmbedding(ctx context.Context, query string) *queryVector {
	qv := &queryVector{done: make(chan struct{})}
	run := func() {
		qv.q8, qv.scale, qv.assumption = p.embedQuery(ctx, query)
		close(qv.done)
	}
	if _, local := p.db.Embedder().(embed.InProcess); local {
		go run()
	} else {
		run()
	}
	return qv
}

// wait returns the embedding once it is computed.
func (qv *queryVector) wait() ([]int8, float32) {
	<-qv.done
	return qv.q8, qv.scale
}

// note is the degradation note of the embedding (nil qv: none asked for).
func (qv *queryVector) note() string {
	if qv == nil {
		return ""
	}
	<-qv.done
	return qv.assumption
}

// packPass is one packing pass of a profile: the profile that runs, its
// budget and its candidate pool depth.
type packPass struct {
	profile string
	budget  int
	pool    int
}

// gathered is what a pass hands the packer: copies, safe to use after the
// view is gone.
type gathered struct {
	preq        pack.Request
	pinned      []pack.Candidate
	cands       []pack.Candidate
	useSemantic bool
	maxTokens   int
	reranked    string     // the assumption note of a reranked pass, "" when not
	late        string     // the assumption note of late interaction, "" when none
	lateIn      *lateInput // what late interaction scores, read in the View; nil: none
	empty       bool       // the workspace holds no visible span
}

// decide packs the gathered candidates (no lock needed).
func (g *gathered) decide(tok text.TokenCounter, assumption string) *pack.Result {
	res := pack.Pack(g.preq, g.pinned, g.cands, tok)
	if assumption != "" && g.useSemantic && !slices.Contains(res.Assumptions, assumption) {
		res.Assumptions = append(res.Assumptions, assumption)
	}
	if g.late != "" {
		res.Assumptions = append(res.Assumptions, g.late)
	}
	if g.reranked != "" {
		res.Assumptions = append(res.Assumptions, g.reranked)
	}
	res.TokenAccounting.Budget = g.maxTokens
	res.TokenAccounting.Remaining = g.maxTokens - res.TokenAccounting.TotalUsed
	if g.empty && res.Abstain {
		// Only the view knows that nothing was there to find.
		res.AbstainReason = pack.AbstainEmpty
	}
	return res
}

// gather retrieves a pass's candidates and pinned spans from v. qv is the
// query's embedding (nil: no semantic channel). docs, when not nil, holds
// for each part the only documents the channels may return (a metadata
// filter, View.MetadataDocs).
func (p *Packer) gather(v *engine.View, req PackRequest, pass packPass, qv *queryVector, docs []*roaring.Bitmap) (*gathered, error) {
	budget, pool := pass.budget, pass.pool
	r := newResolver(v, req.Metadata)
	if req.LateDepth > 0 && p.li != nil {
		r.docs = map[uuid.UUID]docRef{}
	}
	asOf := req.AsOf
	if newest := v.Newest(); asOf == 0 && newest != math.MinInt64 {
		asOf = newest
	}
	windows := queryWindows(req.Query, asOf)

	// Semantic channel: once the query's embedding is ready, its search
	// (the exact scan, or IVF in a large workspace) runs on another
	// goroutine while the lexical channel searches and resolves, and the
	// lexical goroutine joins the search when it is done (a vecindex.Scan
	// or IVFScan is shared chunk by chunk, with the same answer whoever
	// scores what). Its hits are resolved after the lexical ones, so the
	// candidate order stays the same. The view's read lock covers both
	// goroutines (the view ends after the wait below).
	useSemantic := qv != nil
	var scan sharedSearch
	var at []int
	var scanReady, semDone chan struct{}
	var filtered []vecindex.Hit // the semantic hits of a metadata-filtered pack
	var embedded bool           // the query has an embedding: the semantic channel runs
	if useSemantic {
		var parts []vecindex.Part
		parts, at = v.VectorParts()
		// IVF or the exact scan, by the workspace's visible spans: the
		// same choice whatever the layout (vecindex.IVFFor).
		ivf, nprobe := vecindex.IVFFor(parts, v.Spans())
		scanReady, semDone = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(semDone)
			q8, qscale := qv.wait()
			embedded = q8 != nil && qscale > 0
			switch {
			case embedded && docs != nil:
				// Only the matching documents, scored exactly on this
				// goroutine (vecindex.SearchAllowed).
				allow := make([]*roaring.Bitmap, len(parts))
				for i := range parts {
					allow[i] = docs[at[i]]
				}
				filtered = vecindex.SearchAllowed(parts, allow, q8, qscale, pool)
			case embedded && ivf != nil:
				// A large workspace: the probed lists only.
				scan = vecindex.NewIVFScan(parts, ivf, q8, qscale, pool, nprobe)
			case embedded:
				scan = vecindex.NewScan(parts, q8, qscale, pool)
			}
			close(scanReady)
			if scan != nil {
				scan.Work()
			}
		}()
	}
	// Lexical channel.
	for _, h := range invindex.SearchFiltered(v.LexicalParts(), docs, invindex.QueryTerms(invindex.AnalyzeQuestion(req.Query)), pool, p.db.BM25()) {
		c, err := r.candidate(h.Part, h.Doc)
		if err != nil {
			if semDone != nil {
				<-semDone
			}
			return nil, err
		}
		if c == nil {
			continue
		}
		// Hits carry their tie key: the packer need not checksum the text.
		c.Lexical, c.InLexical, c.TieKey = h.Score, true, h.Key
	}
	semantic := false
	if useSemantic {
		<-scanReady
		if scan != nil {
			scan.Work()
		}
		<-semDone
		semantic = embedded
		if semantic {
			hits := filtered
			if scan != nil {
				hits = scan.Hits()
			}
			for _, h := range hits {
				c, err := r.candidate(at[h.Part], h.Doc)
				if err != nil {
					return nil, err
				}
				if c == nil {
					continue
				}
				c.Semantic, c.InSemantic, c.TieKey = h.Score, true, h.Key
			}
		}
	}
	if err := r.windowSpans(v, windows, docs); err != nil {
		return nil, err
	}
	// Pinned spans, whatever the query.
	var pinned []pack.Candidate
	for _, id := range v.Pinned() {
		c, err := r.byID(v.Marks(id).ArtifactID, id)
		if err != nil {
			return nil, err
		}
		if c != nil {
			pinned = append(pinned, *c)
		}
	}
	cands := make([]pack.Candidate, 0, len(r.order))
	for _, id := range r.order { // first-seen order: deterministic
		c := r.cands[id]
		c.Marks = packMarks(v.Marks(c.SpanID))
		cands = append(cands, *c)
	}
	for i := range pinned {
		pinned[i].Marks = packMarks(v.Marks(pinned[i].SpanID))
	}
	preq := pack.Request{Query: req.Query, MaxTokens: budget, ActorID: req.ActorID, SessionID: req.SessionID, Mode: req.Mode,
		Policy: req.Policy, AsOf: asOf, Tuning: req.Tuning, SemanticAvailable: semantic, Lines: p.lines, Analyses: p.analyses,
		Windows: windows}
	g := &gathered{preq: preq, pinned: pinned, cands: cands, useSemantic: useSemantic, maxTokens: req.MaxTokens,
		empty: v.Spans() == 0}
	if r.docs != nil {
		g.lateCandidates(v, r.docs, req.LateDepth)
	}
	return g, nil
}

// sharedSearch is a semantic search that goroutines share (vecindex.Scan,
// vecindex.IVFScan): Work calls, then Hits once they have returned.
type sharedSearch interface {
	Work()
	Hits() []vecindex.Hit
}

// queryWindows resolves the times the query names against asOf, the
// pack's reference time (package when); nil when it names none.
func queryWindows(query string, asOf int64) []pack.Window {
	var out []pack.Window
	for _, w := range when.Resolve(query, time.UnixMicro(asOf)) {
		out = append(out, pack.Window{Start: w.Start.UnixMicro(), End: w.End.UnixMicro(), Expr: w.Expr})
	}
	return out
}

// Window candidates: the spans of the times a query names join the
// temporal channel's candidates, so that "What did we decide on October
// 13?", whose words the lexical channel barely finds, can cite that day's
// turns. Only in a workspace of at most windowScanSpans spans: finding
// them reads every document's artifact time (there is no time index), about
// 0.8 us a span in segments (BenchmarkWindowCandidates: a pack over 20,000
// spans took 24 ms with a date against 7.5 ms without; docs/benchmarks.md),
// so 2,000 (smallWorkspaceSpans) costs about 1.6 ms. And only when the
// windows hold at most windowSpanCap of them: a wider window is better
// chosen within by the query channels than taken whole or cut arbitrarily.
const (
	windowScanSpans = smallWorkspaceSpans
	windowSpanCap   = poolMax
)

// windowSpans adds to r the spans whose artifact time lies in one of ws
// (see windowScanSpans). docs, when not nil, restricts them as it does the
// channels.
func (r *resolver) windowSpans(v *engine.View, ws []pack.Window, docs []*roaring.Bitmap) error {
	if len(ws) == 0 || v.Spans() > windowScanSpans {
		return nil
	}
	type hit struct {
		part int
		doc  uint32
	}
	var hits []hit
	for part := range v.LexicalParts() {
		for doc := range uint32(v.NumDocs(part)) {
			if docs != nil && !docs[part].Contains(doc) {
				continue
			}
			ts, err := v.DocTime(part, doc)
			if err != nil {
				return fmt.Errorf("retrieval: pack: %w", err)
			}
			for _, w := range ws {
				if ts >= w.Start && ts < w.End {
					hits = append(hits, hit{part, doc})
					break
				}
			}
			if len(hits) > windowSpanCap {
				return nil
			}
		}
	}
	for _, h := range hits {
		if _, err := r.candidate(h.part, h.doc); err != nil {
			return err
		}
	}
	return nil
}

// packMarks is the packer's view of a span's feedback marks.
func packMarks(m engine.SpanMarks) pack.Marks {
	return pack.Marks{Pinned: m.Pinned, Private: m.Private, PrivateFor: m.PrivateFor, MarkedWrong: m.MarkedWrong,
		Outdated: m.Outdated, OutdatedBy: m.OutdatedBy}
}

// resolver turns (part, doc) hits into packer candidates, one per span.
// Spans of artifacts that do not match filter (engine.MetadataMatches) are
// no candidates: candidate and byID return nil for them.
type resolver struct {
	v      *engine.View
	filter map[string]string
	cands  map[uuid.UUID]*pack.Candidate
	order  []uuid.UUID
	docs   map[uuid.UUID]docRef // where each candidate lives; nil: not recorded
}

// docRef is a document of a View: its part and number.
type docRef struct {
	part int
	doc  uint32
}

func newResolver(v *engine.View, filter map[string]string) *resolver {
	return &resolver{v: v, filter: filter, cands: map[uuid.UUID]*pack.Candidate{}}
}

func (r *resolver) candidate(part int, doc uint32) (*pack.Candidate, error) {
	sp, a, ok, err := r.v.Doc(part, doc, r.filter)
	if err != nil {
		return nil, fmt.Errorf("retrieval: pack: %w", err)
	}
	if c := r.cands[sp.ID]; c != nil {
		return c, nil
	}
	if !ok {
		return nil, nil
	}
	c := newCandidate(sp, a)
	if c.SourceType == "chat_turn" && sp.Ordinal > 0 {
		first, err := r.v.FirstSpan(part, doc, sp)
		if err != nil {
			return nil, fmt.Errorf("retrieval: pack: %w", err)
		}
		c.TurnSpeaker = turnSpeaker(first.Text)
	}
	r.cands[sp.ID] = c
	r.order = append(r.order, sp.ID)
	if r.docs != nil {
		r.docs[sp.ID] = docRef{part, doc}
	}
	return c, nil
}

// turnSpeaker returns the speaker a chat turn's extracted text starts
// with: a name (text.TurnSpeaker) or a generic role (text.TurnRole), as
// written there; "" when it starts with neither.
func turnSpeaker(s string) string {
	if p := text.TurnSpeaker(s); p != "" {
		return p
	}
	if text.TurnRole(s) != "" {
		return s[:strings.Index(s, ": ")]
	}
	return ""
}

// byID resolves a span by its artifact and id (pinned spans); nil if gone.
func (r *resolver) byID(artID, spanID uuid.UUID) (*pack.Candidate, error) {
	sp, a, ok, err := r.v.Span(artID, spanID, r.filter)
	if err != nil {
		return nil, fmt.Errorf("retrieval: pack: %w", err)
	}
	if !ok {
		return nil, nil
	}
	c := newCandidate(sp, a)
	if c.SourceType == "chat_turn" && sp.Ordinal > 0 {
		first, _, ok, err := r.v.Span(artID, engine.SpanID(artID, 0), nil)
		if err != nil {
			return nil, fmt.Errorf("retrieval: pack: %w", err)
		}
		if ok {
			c.TurnSpeaker = turnSpeaker(first.Text)
		}
	}
	return c, nil
}

// newCandidate is the packer's view of span sp of artifact a. SessionID,
// Timestamp, Seq (the artifact's WAL sequence number, its ingest order in
// every layout) and Start are what the packer orders a conversation by
// when it finds a candidate's neighbours (pack.ContextShare), so turns that
// share a timestamp, or were stamped at ingest, keep the order they were
// sent in.
func newCandidate(sp artifact.Span, a *artifact.Artifact) *pack.Candidate {
	return &pack.Candidate{SpanID: sp.ID, ArtifactID: a.ID, SourceType: a.Type, CreatorID: a.ActorID, SessionID: a.SessionID,
		Timestamp: a.Timestamp, Seq: a.Seq, Text: sp.Text, Tokens: int(sp.Tokens), Start: int(sp.Start), End: int(sp.End), Permissions: a.Permissions}
}
