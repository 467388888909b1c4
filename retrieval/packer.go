// Package retrieval answers queries over the engine's storage: it gathers
// candidates from a workspace's lexical and semantic channels and its
// pinned spans, with their feedback marks (under the engine's read lock, via
// engine.View), lets the packer (package pack) decide what goes into the
// budget, and stores the decision receipt through the engine. Retrieval
// policy lives here: serving profiles, pool depths, balanced's escalation to
// high_recall, the query embedding's overlap with the lexical search, the
// receipt id and body, and the admission of concurrent packs.
package retrieval

import (
	"context"
	"runtime"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/pack"
)

// MaxPackTokens bounds max_tokens of a context pack.
const MaxPackTokens = 128000

// DefaultPackTokens is max_tokens when a v1 request sets none.
const DefaultPackTokens = 4096

// Candidate pool depths per retrieval channel: how many spans each channel
// offers the packer. 100 rather than 200 by default: on LoCoMo it costs
// 0.003 of evidence recall at 2,048 tokens and saves a third of the pack
// time at 100k spans (p50 3.55 -> 2.50 ms, p99 8.8 -> 5.5 ms;
// docs/benchmarks.md).
const (
	poolDefault    = 100
	poolLowLatency = 100
	poolHighRecall = 600
)

// poolFor is the default pool depth of a pack: poolDefault, deeper for
// budgets that hold more than about poolDefault spans of LoCoMo's size (one
// per 24 tokens); in a workspace of at most smallWorkspaceSpans spans (a
// long conversation), where a pack stays cheap (p50 2.4 ms at 1,216 spans
// with pools of 400), deep (poolMax), so that the packer sees the
// neighbours of the best hits; and in one of at most wholeWorkspaceSpans
// spans, every span, so that a turn neither channel ranks in its top 400
// can still be lifted by its neighbours or the speaker prior (on LoCoMo dev,
// 369-680 turns a workspace, with the sentence encoder, evidence recall at
// 4,096 tokens 0.895 -> 0.903, and gold turns no channel offered 11 -> 1;
// lexical only 0.813 -> 0.837; docs/pack.md). spans is the workspace's visible span count, which does
// not depend on layout.
func poolFor(maxTokens, spans int) int {
	p := min(max(poolDefault, maxTokens/24), poolMax)
	switch {
	case spans <= wholeWorkspaceSpans:
		p = max(p, spans)
	case spans <= smallWorkspaceSpans:
		p = poolMax
	}
	return p
}

// poolOf resolves a pass's pool depth in a workspace of spans visible
// spans: 0 means poolFor; poolHighRecall is never shallower than poolFor,
// so that high_recall (and balanced's escalation to it) never gathers less
// than a default pass would.
func poolOf(pool, maxTokens, spans int) int {
	if d := poolFor(maxTokens, spans); pool == 0 || (pool == poolHighRecall && d > pool) {
		return d
	}
	return pool
}

const (
	smallWorkspaceSpans = 2_000
	wholeWorkspaceSpans = 1_000
)

const poolMax = 400

// PackRequest is a context pack request: the v1 fields, and Profile for v2.
type PackRequest struct {
	Workspace string
	Query     string
	MaxTokens int // 1..128000; 0 means DefaultPackTokens
	ActorID   string
	SessionID string
	Mode      string // "relevance" (default) | "coverage"
	Policy    pack.Policy
	AsOf      int64 // Unix µs; 0: the newest artifact time of the workspace
	Tuning    pack.Tuning
	// Advisory limits, echoed in the receipt.
	MaxLatencyMs *float64
	MaxCostUSD   *float64
	// Profile is the v2 serving profile ("" for v1).
	Profile string
	// Metadata, when not empty, restricts the pack to spans of artifacts
	// whose metadata holds every pair with exactly its value (pinned spans
	// included).
	Metadata map[string]string
	// Since and Until, when not nil, bound the time of the artifacts whose
	// spans are retrieved (Unix µs, both inclusive): a hard filter applied
	// in the search (searchDocs). Pinned spans are kept whatever their
	// time, as the caller's authoritative context.
	Since, Until *int64
	// RerankDepth is how many of the best candidates the Packer's
	// relevance model rereads (0: none; at most MaxRerankDepth); without a
	// model it is ignored, and the pack says so among its assumptions.
	RerankDepth int
	// LateDepth is how many of the best candidates the Packer's
	// late-interaction model scores (0: none; at most MaxRerankDepth);
	// without a model it is ignored, and the pack says so among its
	// assumptions.
	LateDepth int
	// LateMaxSpans, when positive, runs LateDepth only in a workspace of
	// at most this many visible spans (whatever part of it a metadata
	// filter or time window leaves); in a larger one the pack runs as with
	// LateDepth 0. The server's default late depth comes with this limit,
	// so that late interaction runs by default where its rows are stored
	// and a pack stays cheap (engine.Options.TokenRowsMaxWorkspaceSpans);
	// the span count is the data's, not the layout's.
	LateMaxSpans int
}

// PackResponse is a packed context with its receipt's id.
type PackResponse struct {
	Result         *pack.Result
	ReceiptID      uuid.UUID
	ServingProfile string // v2: the profile that actually ran
	DataVersion    uint64
}

// Packer builds context packs over one engine, or over a cluster node's
// shards (ContextPackIn). It is safe for concurrent use; a process makes
// one, since admission (at most 4 × GOMAXPROCS packs computing at once) is
// counted per Packer.
type Packer struct {
	db *engine.DB // the engine of ContextPack, and options shared by every engine: embedder, tokens, BM25, clock
	// tag, when set, rewrites a receipt's derived id (TagReceipts).
	tag      func(id uuid.UUID, tenant, ws string) uuid.UUID
	slots    chan struct{}    // admission of concurrent packs
	count    packCounters     // see PackCounts
	lines    *pack.LineCounts // evidence line counts, shared by every pack
	analyses *pack.Analyses   // span texts' analyses, shared by every pack
	rr       Reranker         // nil: no relevance model
	li       LateInteraction  // nil: no late interaction
}

// lineMemo is how many spans' evidence line counts a Packer remembers
// (about 50 bytes each): every span of a 100k-span workspace and then some.
const lineMemo = 1 << 18

// analysisMemo is how many bytes of span text a Packer keeps the analyses
// of (pack.NewAnalyses: about 10 times as many bytes of memory): the spans
// of the packs of the moment, about 2,000 chat turns, in about 5 MB.
const analysisMemo = 512 << 10

// New returns the Packer of db.
func New(db *engine.DB) *Packer {
	return &Packer{db: db, slots: make(chan struct{}, 4*runtime.GOMAXPROCS(0)), lines: pack.NewLineCounts(lineMemo),
		analyses: pack.NewAnalyses(analysisMemo)}
}

// TagReceipts makes receipt ids pass through tag after their derivation
// (cluster mode with partial replication: the id names its shard). tag
// must be a function of its arguments, so that ids stay deterministic.
// Call it before the first pack.
func (p *Packer) TagReceipts(tag func(id uuid.UUID, tenant, ws string) uuid.UUID) { p.tag = tag }

// ContextPack retrieves candidates for the query from the workspace
// (lexical, semantic and temporal channels), lets the packer decide what
// goes into the token budget, and stores the decision receipt durably. The
// same request on the same data (same data version) returns a byte-identical
// result and the same receipt id, whatever the data's layout.
//
// req must be valid (the service checks it: service.CheckPackRequest);
// what it leaves zero takes its default. ContextPack packs from the
// Packer's engine; ContextPackIn from the one its caller routed to.
func (p *Packer) ContextPack(ctx context.Context, tenant string, req PackRequest) (*PackResponse, error) {
	return p.ContextPackIn(ctx, p.db, tenant, req)
}

// ContextPackIn is ContextPack from db, the engine that holds the workspace
// (cluster mode: its shard's), with the Packer's admission and line memo.
func (p *Packer) ContextPackIn(ctx context.Context, db *engine.DB, tenant string, req PackRequest) (*PackResponse, error) {
	withDefaults(&req)
	profile := req.Profile
	// The query's embedding starts now; an in-process embedder runs while
	// the lexical channel searches (see gather), a remote one is waited for
	// here, outside any lock, as it may be slow.
	var qv *queryVector
	if profile != pack.ProfileLowLatency {
		qv = p.startQueryEmbedding(ctx, req.Query)
	}
	// The query's late-interaction encoding starts now too. When the
	// workspace's size decides whether it runs (LateMaxSpans), the
	// engine's estimate of that size only says whether to start it now or
	// once the first pass has counted the spans: a model pass must not take
	// a core from a large workspace's scan for nothing.
	var lq *lateQuery
	if req.LateDepth > 0 && p.li != nil && (req.LateMaxSpans <= 0 || db.WorkspaceSpans(tenant, req.Workspace) <= req.LateMaxSpans) {
		lq = startLateQuery(p.li, req.Query)
	}

	// The passes of each profile: (profile that runs, budget, pool depth).
	// balanced escalates to high_recall when its first pass finds sparse
	// evidence. high_recall is one pass of its deep pool with the whole
	// budget (pack.BudgetFor): the pass balanced escalates to, so it never
	// returns less evidence than balanced.
	first := packPass{profile, req.MaxTokens, 0} // pool 0: poolFor, decided under the lock
	var second *packPass
	switch profile {
	case pack.ProfileLowLatency:
		first.pool = poolLowLatency
	case pack.ProfileBalanced:
		first.budget = pack.BudgetFor(profile, req.MaxTokens, false)
		second = &packPass{pack.ProfileHighRecall, pack.BudgetFor(pack.ProfileHighRecall, req.MaxTokens, true), poolHighRecall}
	case pack.ProfileHighRecall:
		first = packPass{profile, pack.BudgetFor(profile, req.MaxTokens, false), poolHighRecall}
	}
	// Admission: at most 4 × GOMAXPROCS packs compute at once; the rest wait
	// their turn in order instead of all sharing the cores, which keeps
	// the latency of each pack near its CPU time under load.
	// A pack whose ctx ends while it waits (its client has gone, the
	// server is stopping) gives up its place: abandoned requests must not
	// make live ones wait behind work nobody will read.
	if err := p.admit(ctx); err != nil {
		return nil, err
	}
	defer func() { <-p.slots }()
	// Candidates are gathered in an engine.View (under the engine's read
	// lock); the packer, which only reads the gathered copies, runs without
	// it, so that writers (a receipt, an ingest) wait for less. Both passes
	// must see one data version: if the workspace changed in between, the
	// pack starts over.
	tok := p.db.TokenCounter()
	var res *pack.Result
	var served string
	// seen is what the first pass saw: the second must see the same data
	// version, and both use its span count.
	var seen struct {
		version uint64
		newest  int64
		spans   int
	}
	// gatherPass gathers pass in a View; nil (the second pass only) when the
	// data version is no longer the one the first pass saw.
	lateDepth, lateMax := req.LateDepth, req.LateMaxSpans
	gatherPass := func(pass packPass, firstPass bool) (*gathered, error) {
		var g *gathered
		err := db.View(tenant, req.Workspace, func(v *engine.View) error {
			if !firstPass && (v.DataVersion() != seen.version || v.Newest() != seen.newest) {
				return nil
			}
			// A metadata filter and a time window restrict the search to
			// the matching spans, and the pool depth follows how many
			// there are.
			docs, err := searchDocs(v, req)
			if err != nil {
				return err
			}
			if firstPass {
				seen.version, seen.newest, seen.spans = v.DataVersion(), v.Newest(), v.Spans()
				if docs != nil {
					seen.spans = 0
					for _, d := range docs {
						seen.spans += int(d.GetCardinality())
					}
				}
			}
			// The workspace's size, not the filtered part's, decides late
			// interaction: rows are stored for small workspaces only, and a
			// filter on a large one must not make its packs compute them.
			if firstPass && lateMax > 0 { // the receipt records the depth that ran
				req.LateDepth = lateDepth
				if v.Spans() > lateMax {
					req.LateDepth = 0
				}
			}
			pass.pool = poolOf(pass.pool, req.MaxTokens, seen.spans)
			g, err = p.gather(v, req, pass, qv, docs)
			return err
		})
		return g, err
	}
	for {
		g, err := gatherPass(first, true)
		if err != nil {
			return nil, err
		}
		if lq == nil && req.LateDepth > 0 && p.li != nil {
			lq = startLateQuery(p.li, req.Query)
		}
		if err := p.rerankPass(ctx, g, req, lq); err != nil {
			return nil, err
		}
		res, served = g.decide(tok, qv.note()), first.profile
		if second == nil || !pack.Sparse(res) {
			break
		}
		if g, err = gatherPass(*second, false); err != nil {
			return nil, err
		}
		if g == nil {
			continue // the workspace changed between the passes: start over
		}
		if err := p.rerankPass(ctx, g, req, lq); err != nil {
			return nil, err
		}
		res, served = g.decide(tok, qv.note()), second.profile
		break
	}
	version := seen.version

	id := receiptID(tenant, req, version, res, served)
	if p.tag != nil {
		id = p.tag(id, tenant, req.Workspace)
	}
	now := p.db.Now().UTC()
	body, err := receiptBody(id, req, res, served, version, now)
	if err != nil {
		return nil, err
	}
	body, cuts := stripPreviews(body, res.Citations)
	err = db.StoreReceipt(engine.Receipt{ID: id, Tenant: tenant, Workspace: req.Workspace, Query: req.Query, ActorID: req.ActorID,
		PackHash: res.PackHash, Timestamp: p.db.Now().UTC().UnixMicro(), Confidence: res.Confidence, Abstain: res.Abstain,
		TotalTokens: res.TotalTokens, Body: body, Cuts: cuts})
	if err != nil {
		return nil, err
	}
	return &PackResponse{Result: res, ReceiptID: id, ServingProfile: served, DataVersion: version}, nil
}

// rerankPass reranks a gathered pass when the request asks for it.
func (p *Packer) rerankPass(ctx context.Context, g *gathered, req PackRequest, lq *lateQuery) error {
	switch {
	case req.LateDepth <= 0:
	case p.li == nil:
		g.late = pack.AssumeNoLate
	default:
		if err := g.lateInteraction(ctx, p.li, lq); err != nil {
			return err
		}
	}
	switch {
	case req.RerankDepth <= 0:
		return nil
	case p.rr == nil:
		g.reranked = pack.AssumeNoReranker
		return nil
	}
	return g.rerank(ctx, p.rr, req.Query, req.RerankDepth)
}

// withDefaults fills what a request may leave zero: max_tokens
// (DefaultPackTokens), the mode (relevance) and the tuning (the packer's
// defaults); its metadata filter is copied, so that the caller's map may
// change while the pack runs.
func withDefaults(req *PackRequest) {
	if req.MaxTokens == 0 {
		req.MaxTokens = DefaultPackTokens
	}
	if req.Mode == "" {
		req.Mode = "relevance"
	}
	if req.Tuning == (pack.Tuning{}) {
		req.Tuning = pack.DefaultTuning()
	}
	req.Metadata = engine.CloneMetadata(req.Metadata)
}
