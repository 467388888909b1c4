package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/pack"
	"github.com/loci-memory/loci/text"
	"github.com/loci-memory/loci/vecindex"
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
}

// PackResponse is a packed context with its receipt's id.
type PackResponse struct {
	Result         *pack.Result
	ReceiptID      uuid.UUID
	ServingProfile string // v2: the profile that actually ran
	DataVersion    uint64
}

// ContextPack retrieves candidates for the query from the workspace
// (lexical, semantic and temporal channels), lets the packer decide what
// goes into the token budget, and stores the decision receipt durably. The
// same request on the same data (same data version) returns a byte-identical
// result and the same receipt id, whatever the data's layout.
func (db *DB) ContextPack(ctx context.Context, tenant string, req PackRequest) (*PackResponse, error) {
	if err := validatePackRequest(&req); err != nil {
		return nil, err
	}
	profile := req.Profile
	switch profile {
	case "":
	case pack.ProfileLowLatency, pack.ProfileBalanced, pack.ProfileHighRecall:
	default:
		return nil, &InvalidError{"profile", fmt.Sprintf("unknown value %q; allowed: low_latency, balanced, high_recall", profile)}
	}
	// The query's embedding starts now; an in-process embedder runs while
	// the lexical channel searches (see gatherLocked), a remote one is
	// waited for here, outside any lock, as it may be slow.
	var qv *queryVector
	if profile != pack.ProfileLowLatency {
		qv = db.startQueryEmbedding(ctx, req.Query)
	}
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.leave()

	k := wsKey{tenant, req.Workspace}
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
	// Candidates are gathered under the read lock; the packer, which only
	// reads the gathered copies, runs without it, so that writers (a
	// receipt, an ingest) wait for less. Both passes must see one data
	// version: if the workspace changed in between, the pack starts over.
	var res *pack.Result
	var served string
	var version wsVersion
	// Admission: at most 4 × GOMAXPROCS packs compute at once; the rest wait
	// their turn in order instead of all sharing the cores, which keeps
	// the latency of each pack near its CPU time under load.
	// A pack whose ctx ends while it waits (its client has gone, the
	// server is stopping) gives up its place: abandoned requests must not
	// make live ones wait behind work nobody will read.
	if err := db.admitPack(ctx); err != nil {
		return nil, err
	}
	defer func() { <-db.packSlots }()
	for {
		db.mu.RLock()
		version = db.versions[k]
		spans := db.workspaceSpansLocked(k)
		p := first
		p.pool = poolOf(p.pool, req.MaxTokens, spans)
		g, err := db.gatherLocked(k, req, p, qv, version)
		db.mu.RUnlock()
		if err != nil {
			return nil, err
		}
		res, served = g.decide(db.opts.TokenCounter, qv.note()), first.profile
		if second == nil || !pack.Sparse(res) {
			break
		}
		db.mu.RLock()
		if v := db.versions[k]; v.Seq != version.Seq || v.Newest != version.Newest {
			db.mu.RUnlock()
			continue
		}
		p = *second
		p.pool = poolOf(p.pool, req.MaxTokens, spans)
		g, err = db.gatherLocked(k, req, p, qv, version)
		db.mu.RUnlock()
		if err != nil {
			return nil, err
		}
		res, served = g.decide(db.opts.TokenCounter, qv.note()), second.profile
		break
	}

	receiptID := receiptID(tenant, req, version.Seq)
	body, err := receiptBody(receiptID, tenant, req, res, served, version.Seq, db.opts.Now().UTC())
	if err != nil {
		return nil, err
	}
	err = db.storeReceipt(Receipt{ID: receiptID, Tenant: tenant, Workspace: req.Workspace, Query: req.Query, ActorID: req.ActorID,
		PackHash: res.PackHash, Timestamp: db.opts.Now().UTC().UnixMicro(), Confidence: res.Confidence, Abstain: res.Abstain,
		TotalTokens: res.TotalTokens, Body: body, cites: res.Citations})
	if err != nil {
		return nil, err
	}
	return &PackResponse{Result: res, ReceiptID: receiptID, ServingProfile: served, DataVersion: version.Seq}, nil
}

func validatePackRequest(req *PackRequest) error {
	if err := checkID("workspace_id", req.Workspace, true); err != nil {
		return err
	}
	if req.Query == "" {
		return &InvalidError{"query", "is required and must not be empty"}
	}
	if len(req.Query) > 16<<10 {
		return &InvalidError{"query", "is longer than 16384 bytes"}
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = DefaultPackTokens
	}
	if req.MaxTokens < 1 || req.MaxTokens > MaxPackTokens {
		return &InvalidError{"max_tokens", fmt.Sprintf("must be between 1 and %d, got %d", MaxPackTokens, req.MaxTokens)}
	}
	if err := checkID("actor_id", req.ActorID, false); err != nil {
		return err
	}
	if err := checkID("session_id", req.SessionID, false); err != nil {
		return err
	}
	switch req.Mode {
	case "":
		req.Mode = "relevance"
	case "relevance", "coverage":
	default:
		return &InvalidError{"mode", fmt.Sprintf("unknown value %q; allowed: relevance, coverage", req.Mode)}
	}
	switch req.Policy.PrivacyLevel {
	case "", pack.PrivacyDefault, pack.PrivacyStrict:
	default:
		return &InvalidError{"policy.privacy_level", fmt.Sprintf("unknown value %q; allowed: default, strict", req.Policy.PrivacyLevel)}
	}
	if req.Tuning == (pack.Tuning{}) {
		req.Tuning = pack.DefaultTuning()
	}
	if err := CheckMetadata("metadata", req.Metadata); err != nil {
		return err
	}
	req.Metadata = cloneMetadata(req.Metadata)
	return nil
}

// embedQuery returns the quantized query vector, or a degradation note.
func (db *DB) embedQuery(ctx context.Context, query string) ([]int8, float32, string) {
	if db.opts.Embedder == nil {
		return nil, 0, pack.AssumeNoSemantic
	}
	vecs, err := db.opts.Embedder.Embed(ctx, []string{query})
	_, dim := db.embedModel()
	if err != nil || len(vecs) != 1 || len(vecs[0]) != dim {
		if err != nil && !errors.Is(err, vecindex.ErrUnavailable) {
			db.log.Warn("engine: query embedding failed", "err", err)
		}
		return nil, 0, pack.AssumeNoSemantic
	}
	q := make([]int8, dim)
	return q, vecindex.Quantize(vecs[0], q), ""
}

// queryVector is a query's embedding, possibly still being computed.
type queryVector struct {
	done       chan struct{} // closed once the fields are set
	q8         []int8        // nil: no semantic channel (see assumption)
	scale      float32
	assumption string
}

// startQueryEmbedding embeds the query: on its own goroutine when the
// embedder computes in this process (vecindex.InProcess), so that it
// overlaps with the lexical search; otherwise before returning.
func (db *DB) startQueryEmbedding(ctx context.Context, query string) *queryVector {
	qv := &queryVector{done: make(chan struct{})}
	run := func() {
		qv.q8, qv.scale, qv.assumption = db.embedQuery(ctx, query)
		close(qv.done)
	}
	if _, local := db.opts.Embedder.(vecindex.InProcess); local {
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
// read lock is released.
type gathered struct {
	preq        pack.Request
	pinned      []pack.Candidate
	cands       []pack.Candidate
	useSemantic bool
	maxTokens   int
}

// decide packs the gathered candidates (no lock needed).
func (g *gathered) decide(tok text.TokenCounter, assumption string) *pack.Result {
	res := pack.Pack(g.preq, g.pinned, g.cands, tok)
	if assumption != "" && g.useSemantic && !slices.Contains(res.Assumptions, assumption) {
		res.Assumptions = append(res.Assumptions, assumption)
	}
	res.TokenAccounting.Budget = g.maxTokens
	res.TokenAccounting.Remaining = g.maxTokens - res.TokenAccounting.TotalUsed
	return res
}

// gatherLocked retrieves a pass's candidates and pinned spans. Callers hold
// mu. qv is the query's embedding (nil: no semantic channel).
func (db *DB) gatherLocked(k wsKey, req PackRequest, p packPass, qv *queryVector, version wsVersion) (*gathered, error) {
	budget, pool := p.budget, p.pool
	srcs := db.workspaceSources(k)
	r := newResolver(srcs, db)
	r.filter = req.Metadata

	// Semantic channel: once the query's embedding is ready, its exact scan
	// runs on another goroutine while the lexical channel searches and
	// resolves, and the lexical goroutine joins the scan when it is done
	// (a vecindex.Scan is shared chunk by chunk, with the same answer
	// whoever scores what). Its hits are resolved after the lexical ones,
	// so the candidate order stays the same. The caller's read lock covers
	// both goroutines (it is released after the wait below).
	useSemantic := qv != nil
	var scan *vecindex.Scan
	var at []int
	var scanReady, semDone chan struct{}
	if useSemantic {
		model, dim := db.embedModel()
		var parts []vecindex.Part
		for i, src := range srcs {
			p := src.vecPart()
			if p != nil && p.Model() == model && p.Dim() == dim {
				parts, at = append(parts, p), append(at, i)
			}
		}
		scanReady, semDone = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(semDone)
			q8, qscale := qv.wait()
			if q8 != nil && qscale > 0 {
				scan = vecindex.NewScan(parts, q8, qscale, pool)
			}
			close(scanReady)
			if scan != nil {
				scan.Work()
			}
		}()
	}
	// Lexical channel.
	lexParts := make([]invindex.Part, len(srcs))
	for i, src := range srcs {
		lexParts[i] = src.lexPart()
	}
	for _, h := range invindex.Search(lexParts, invindex.QueryTerms(invindex.AnalyzeQuestion(req.Query)), pool, db.opts.BM25) {
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
		semantic = scan != nil
		if semantic {
			for _, h := range scan.Hits() {
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
	// Pinned spans, whatever the query.
	f := db.feedback[k]
	var pinned []pack.Candidate
	for _, id := range f.pinned() {
		c, err := r.byID(f.marks(id).ArtifactID, id)
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
		c.Marks = packMarks(f.marks(c.SpanID))
		cands = append(cands, *c)
	}
	for i := range pinned {
		pinned[i].Marks = packMarks(f.marks(pinned[i].SpanID))
	}
	asOf := req.AsOf
	if asOf == 0 && version.Newest != math.MinInt64 {
		asOf = version.Newest
	}
	preq := pack.Request{Query: req.Query, MaxTokens: budget, ActorID: req.ActorID, SessionID: req.SessionID, Mode: req.Mode,
		Policy: req.Policy, AsOf: asOf, Tuning: req.Tuning, SemanticAvailable: semantic}
	return &gathered{preq: preq, pinned: pinned, cands: cands, useSemantic: useSemantic, maxTokens: req.MaxTokens}, nil
}

func packMarks(m SpanMarks) pack.Marks {
	return pack.Marks{Pinned: m.Pinned, Private: m.Private, PrivateFor: m.PrivateFor, MarkedWrong: m.MarkedWrong,
		Outdated: m.Outdated, OutdatedBy: m.OutdatedBy}
}

// resolver turns (part, doc) hits into packer candidates, one per span,
// reading each artifact's metadata once. Spans of artifacts that do not
// match filter (metadataMatches) are no candidates: candidate and byID
// return nil for them. Callers hold mu.
type resolver struct {
	db     *DB
	srcs   []partSource
	cands  map[uuid.UUID]*pack.Candidate
	order  []uuid.UUID
	arts   map[uuid.UUID]*artifact.Artifact
	filter map[string]string
}

func newResolver(srcs []partSource, db *DB) *resolver {
	return &resolver{db: db, srcs: srcs, cands: map[uuid.UUID]*pack.Candidate{}, arts: map[uuid.UUID]*artifact.Artifact{}}
}

func (r *resolver) candidate(part int, doc uint32) (*pack.Candidate, error) {
	src := r.srcs[part]
	var sp artifact.Span
	var a *artifact.Artifact
	if src.hw != nil {
		ref := src.hw.refs[doc]
		sp, a = ref.ha.spans[ref.i], ref.ha.a
	} else {
		var err error
		if sp, err = src.seg.Span(src.ws, src.segDoc(doc)); err != nil {
			return nil, fmt.Errorf("engine: pack: %w", err)
		}
	}
	if c := r.cands[sp.ID]; c != nil {
		return c, nil
	}
	if a == nil {
		var err error
		if a, err = r.artifact(sp.ArtifactID); err != nil {
			return nil, err
		}
	}
	if !metadataMatches(a.Metadata, r.filter) {
		return nil, nil
	}
	c := newCandidate(sp, a)
	r.cands[sp.ID] = c
	r.order = append(r.order, sp.ID)
	return c, nil
}

// byID resolves a span by its artifact and id (pinned spans); nil if gone.
func (r *resolver) byID(artID, spanID uuid.UUID) (*pack.Candidate, error) {
	a, err := r.artifact(artID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !metadataMatches(a.Metadata, r.filter) {
		return nil, nil
	}
	ha, s, ref, ok := r.db.locate(a.Tenant, artID)
	if !ok {
		return nil, nil
	}
	spans := []artifact.Span(nil)
	if ha != nil {
		spans = ha.spans
	} else if spans, err = s.ArtifactSpans(ref); err != nil {
		return nil, fmt.Errorf("engine: pack: %w", err)
	}
	for _, sp := range spans {
		if sp.ID == spanID {
			return newCandidate(sp, a), nil
		}
	}
	return nil, nil
}

func (r *resolver) artifact(id uuid.UUID) (*artifact.Artifact, error) {
	if a := r.arts[id]; a != nil {
		return a, nil
	}
	for _, h := range r.db.headsNewestFirst() {
		if ha := h.byID[id]; ha != nil {
			r.arts[id] = ha.a
			return ha.a, nil
		}
	}
	for i := len(r.db.segments) - 1; i >= 0; i-- {
		s := r.db.segments[i]
		if ref, ok := s.FindArtifact(id); ok {
			a, err := s.artifactMeta(id, ref)
			if err != nil {
				return nil, fmt.Errorf("engine: pack: %w", err)
			}
			r.arts[id] = a
			return a, nil
		}
	}
	return nil, ErrNotFound
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

// receiptNamespace scopes receipt ids (UUIDs derived with SHA-256).
var receiptNamespace = uuid.MustParse("6f1c8a52-3c1e-4c7e-9a55-2b7f0b1d9e11")

// receiptID derives a receipt's id from the tenant, the workspace's data
// version and the canonical request, so an identical request on identical
// data maps to one receipt.
func receiptID(tenant string, req PackRequest, version uint64) uuid.UUID {
	canon, _ := json.Marshal(canonicalRequest(req))
	data := fmt.Appendf(nil, "%s\x00%s\x00%d\x00", tenant, req.Workspace, version)
	return uuid.NewHash(sha256.New(), receiptNamespace, append(data, canon...), 8)
}

// canonicalRequest is a request with defaults applied and lists sorted.
func canonicalRequest(req PackRequest) any {
	p := req.Policy
	sorted := func(s []string) []string { c := slices.Clone(s); slices.Sort(c); return c }
	p.AllowedSources, p.DeniedSources, p.AllowedActors = sorted(p.AllowedSources), sorted(p.DeniedSources), sorted(p.AllowedActors)
	p.RBACRequired = sorted(p.RBACRequired)
	return struct {
		Query, Actor, Session, Mode, Profile string
		MaxTokens                            int
		Policy                               pack.Policy
		AsOf                                 int64
		Tuning                               pack.Tuning
		MaxLatencyMs, MaxCostUSD             *float64
		// Metadata is left out when empty, so that requests without a
		// filter keep the receipt ids they had before filters existed.
		// encoding/json writes map keys sorted: the order sent is irrelevant.
		Metadata map[string]string `json:",omitempty"`
	}{req.Query, req.ActorID, req.SessionID, req.Mode, req.Profile, req.MaxTokens, p, req.AsOf, req.Tuning, req.MaxLatencyMs, req.MaxCostUSD,
		req.Metadata}
}

// receiptBody is the full receipt as the receipts endpoint serves it.
func receiptBody(id uuid.UUID, tenant string, req PackRequest, res *pack.Result, profile string, version uint64, now time.Time) ([]byte, error) {
	policy := res.PolicySummary
	var reason *string
	if res.AbstainReason != "" {
		reason = &res.AbstainReason
	}
	return json.Marshal(struct {
		ID                   uuid.UUID                  `json:"id"`
		Query                string                     `json:"query"`
		Timestamp            string                     `json:"timestamp"`
		WorkspaceID          string                     `json:"workspace_id"`
		ActorID              string                     `json:"actor_id"`
		Evidence             []pack.Citation            `json:"evidence"`
		ChannelContributions []pack.ChannelContribution `json:"channel_contributions"`
		Exclusions           []pack.Exclusion           `json:"exclusions"`
		Conflicts            []pack.Conflict            `json:"conflicts"`
		TokenAccounting      pack.TokenAccounting       `json:"token_accounting"`
		Confidence           float64                    `json:"confidence"`
		AbstainFlag          bool                       `json:"abstain_flag"`
		AbstainReason        *string                    `json:"abstain_reason"`
		Assumptions          []string                   `json:"assumptions"`
		PolicySummary        pack.Policy                `json:"policy_summary"`
		PackHash             string                     `json:"pack_hash"`
		Mode                 string                     `json:"mode"`
		ServingProfile       string                     `json:"serving_profile,omitempty"`
		MaxLatencyMs         *float64                   `json:"max_latency_ms"`
		MaxCostUSD           *float64                   `json:"max_cost_usd"`
		DataVersion          uint64                     `json:"data_version"`
		Metadata             map[string]string          `json:"metadata_filter,omitempty"`
	}{id, req.Query, now.Format(time.RFC3339Nano), req.Workspace, req.ActorID, res.Citations, res.ChannelContributions,
		res.Exclusions, res.Conflicts, res.TokenAccounting, res.Confidence, res.Abstain, reason, res.Assumptions, policy,
		res.PackHash, req.Mode, profile, req.MaxLatencyMs, req.MaxCostUSD, version, req.Metadata})
}

// packCounters counts packs at admission (see PackCounts).
type packCounters struct {
	started, cancelled atomic.Uint64
	waiting            atomic.Int64
}

// PackCounts says how packs have passed admission since Open.
type PackCounts struct {
	Started   uint64 // admitted: computed, or computing now
	Cancelled uint64 // gave up waiting because their context ended
	Waiting   int64  // waiting for a slot now
}

// PackCounts returns the admission counters: operators see abandoned work
// shed, and tests can wait for a queue state instead of sleeping.
func (db *DB) PackCounts() PackCounts {
	return PackCounts{Started: db.packCount.started.Load(), Cancelled: db.packCount.cancelled.Load(),
		Waiting: db.packCount.waiting.Load()}
}

// admitPack takes an admission slot, waiting in order while all are busy,
// unless ctx ends first. The caller releases the slot.
func (db *DB) admitPack(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		db.packCount.cancelled.Add(1)
		return fmt.Errorf("engine: context pack not started: %w", err)
	}
	select {
	case db.packSlots <- struct{}{}:
	default:
		db.packCount.waiting.Add(1)
		select {
		case db.packSlots <- struct{}{}:
			db.packCount.waiting.Add(-1)
		case <-ctx.Done():
			db.packCount.waiting.Add(-1)
			db.packCount.cancelled.Add(1)
			return fmt.Errorf("engine: context pack gave up waiting for a slot: %w", ctx.Err())
		}
	}
	db.packCount.started.Add(1)
	return nil
}

// ReservePackSlots takes n of the pack admission slots (at most all of
// them) until release is called, so that packs beyond the rest wait as they
// would under load. Load tests and tests of the admission queue use it.
func (db *DB) ReservePackSlots(n int) (release func()) {
	n = min(n, cap(db.packSlots))
	for i := 0; i < n; i++ {
		db.packSlots <- struct{}{}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for i := 0; i < n; i++ {
				<-db.packSlots
			}
		})
	}
}
