// Package service is Loci's transport-neutral service layer. The control
// plane: who a caller is (API keys, the admin key), tenant registration, key
// management, plans, rate limits and usage metering. The data plane over the
// engine: ingest (v1 and batches, idempotency, asynchronous jobs and the
// runner that indexes them), artifacts (read, status, erase, listings),
// workspaces (listing, settings, erasure), feedback and receipts, each with
// its request validation. Transports (httpd, mcpd; the web console is a
// client of httpd's API) decode a request, call a Service method with the
// caller's Principal and a typed request, and encode its typed response;
// they map the kind of its errors (Classify, errors.go: the one error
// vocabulary, also for the engine's and control's errors it passes through)
// to their own answers in one place.
//
// The durable state lives in engine and control; rate-limit windows in
// ratelimit. API keys reach the service only to be checked: control keeps
// their SHA-256, and nothing here logs or stores a secret.
package service

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/ratelimit"
	"github.com/loci-memory/loci/retrieval"
)

// DefaultTenant is the tenant every request acts as when authentication is
// off, and the tenant of requests made with the admin key.
const DefaultTenant = control.DefaultTenant

// Types of the control plane that the service's API carries unchanged, so
// that transports need not import control.
type (
	// Plan is a service plan: rate limit, v2 API, workspace limit.
	Plan = control.Plan
	// KeyInfo describes an API key; it never holds the secret.
	KeyInfo = control.KeyInfo
	// UsageDelta is what one request used, counted by Meter.
	UsageDelta = control.UsageDelta
	// Usage is a tenant's usage in one month.
	Usage = control.Usage
)

// Config configures a Service. The zero value has authentication off.
type Config struct {
	// AdminKey is the operator's admin key. Empty: authentication is off and
	// every caller acts as DefaultTenant (plan enterprise, no rate limit).
	AdminKey string
	// OpenRegistration lets anyone register a free tenant without the admin key.
	OpenRegistration bool
	// RateWindow is the plan rate limit's sliding window (default 60 s).
	RateWindow time.Duration
	// RegisterLimit is how many open registrations one client address may
	// make per RegisterWindow (default 5 per hour; negative: no limit).
	// Registrations with the admin key are not limited.
	RegisterLimit  int
	RegisterWindow time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// AsyncIndexing makes v1 ingest store the artifact in a job and index
	// it in the background (Indexed false in the result).
	AsyncIndexing bool
	// IndexWorkers is the number of background indexing workers (default 2;
	// negative: none, so jobs wait for a service that has workers).
	IndexWorkers int
	// NoJobs refuses asynchronous indexing (cluster mode, where an indexing
	// job's fence would compare sequence numbers of two different streams).
	NoJobs bool
	// Logger receives the job runner's failures (default slog.Default()).
	Logger *slog.Logger
	// Reranker is the relevance model packs with a rerank depth use (nil:
	// none; such packs say so among their assumptions).
	Reranker retrieval.Reranker
	// LateInteraction is the late-interaction model (nil: none) of packs
	// with a late_depth; LateInteractionDepth is the late_depth of packs
	// that leave it out (low_latency never runs it unless asked; docs/pack.md
	// § Late interaction): with LateInteractionMaxSpans positive, v1, v2
	// balanced and high_recall packs in workspaces of at most that many
	// spans (retrieval.PackRequest.LateMaxSpans; the engine stores the
	// token rows of those only, engine.Options.TokenRowsMaxWorkspaceSpans);
	// with 0, v2 balanced and high_recall packs of any size, and no v1 pack.
	LateInteraction         retrieval.LateInteraction
	LateInteractionDepth    int
	LateInteractionMaxSpans int
}

// Shards is where the data plane lives: one engine on a single node, one
// engine per shard in cluster mode (package cluster).
type Shards interface {
	// Engine returns the engine that holds workspace ws of tenant, or a
	// *NotServedError when this node does not serve its shard.
	Engine(tenant, ws string) (*engine.DB, error)
	// Engines returns every engine this node serves, in a fixed order.
	Engines() []*engine.DB
}

// PartialShards is the Shards of a cluster node that serves only some of
// the shards (cluster mode with --cluster-replicas): requests for the others
// are forwarded by the transport (NotServedError). Ids of artifacts and
// receipts carry their shard (TagShard), so that a request by id finds its
// shard without asking every node.
type PartialShards interface {
	Shards
	// Partial reports whether the node serves only some shards; when
	// false, the service behaves as over plain Shards.
	Partial() bool
	// ShardCount is the number of shards; ShardOf is the shard of a
	// workspace; ShardEngine is shard k's engine or a *NotServedError.
	ShardCount() int
	ShardOf(tenant, ws string) int
	ShardEngine(k int) (*engine.DB, error)
	// ControlEngine is an engine every node has, whose options are every
	// shard's (validation, the packer's clock and tokenizer).
	ControlEngine() *engine.DB
}

// NotServedError refuses a request for data on a shard this node does not
// serve. NodeID and Addr name a live node whose lease says it serves the
// shard (the first in rendezvous order), where the transport forwards the
// request unchanged; empty when no live node serves it (503, retry).
type NotServedError struct {
	Shard  int
	NodeID string
	Addr   string
	// Alternates are the other live nodes serving the shard, in rendezvous
	// order: where to go when NodeID cannot be reached (its lease has not
	// expired yet).
	Alternates []NodeAddr
}

// NodeAddr is a node of a cluster and its API address.
type NodeAddr struct {
	NodeID string
	Addr   string
}

func (e *NotServedError) Error() string {
	if e.NodeID == "" {
		return fmt.Sprintf("no live node serves shard %d right now (a node is taking it over); retry shortly", e.Shard)
	}
	return fmt.Sprintf("shard %d is served by node %s (%s), not this one", e.Shard, e.NodeID, e.Addr)
}

// TagShard returns id with its last two bytes set to shard k (big endian),
// version and variant bits untouched: artifact and receipt ids in a
// partially replicated cluster name their shard.
func TagShard(id uuid.UUID, k int) uuid.UUID {
	id[14], id[15] = byte(k>>8), byte(k)
	return id
}

// IDShard is the shard an id was tagged with (TagShard).
func IDShard(id uuid.UUID) int { return int(id[14])<<8 | int(id[15]) }

// oneEngine is the Shards of a single node.
type oneEngine struct{ db *engine.DB }

func (o oneEngine) Engine(string, string) (*engine.DB, error) { return o.db, nil }
func (o oneEngine) Engines() []*engine.DB                     { return []*engine.DB{o.db} }

// Service serves the control plane over one control.Store and the data
// plane over its Shards. It is safe for concurrent use.
type Service struct {
	db         *engine.DB // the first engine: what is the same in all (validation, options)
	shards     Shards
	partial    PartialShards     // set when the node serves only some shards
	packer     *retrieval.Packer // context packs over shards
	ctl        *control.Store
	cfg        Config
	log        *slog.Logger
	limiter    *ratelimit.Limiter // per tenant: the plan's requests per minute
	regLimiter *ratelimit.Limiter // per client address: open registrations

	jobs      *jobRunner // nil until Start
	stopUsage chan struct{}
	usageDone chan struct{}
	stopOnce  sync.Once
}

// New returns a service over db and its control state ctl (db's
// engine.Options.Control, attached to db), with cfg's zero fields set to
// their defaults. Start runs its background work. A service with a nil db
// serves the control plane only (its tests).
func New(db *engine.DB, ctl *control.Store, cfg Config) *Service {
	if db == nil {
		return NewSharded(nil, ctl, cfg)
	}
	return NewSharded(oneEngine{db}, ctl, cfg)
}

// NewSharded returns a service whose data plane is spread over shards
// (cluster mode); New is NewSharded over one engine.
func NewSharded(shards Shards, ctl *control.Store, cfg Config) *Service {
	if cfg.RateWindow <= 0 {
		cfg.RateWindow = time.Minute
	}
	if cfg.RegisterLimit == 0 {
		cfg.RegisterLimit = 5
	}
	if cfg.RegisterWindow <= 0 {
		cfg.RegisterWindow = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.IndexWorkers == 0 {
		cfg.IndexWorkers = 2
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var packer *retrieval.Packer
	var db *engine.DB
	var partial PartialShards
	if ps, ok := shards.(PartialShards); ok && ps.Partial() {
		partial = ps
		db = ps.ControlEngine()
		packer = retrieval.New(db)
		// A receipt's id names its shard, as an artifact's does.
		packer.TagReceipts(func(id uuid.UUID, tenant, ws string) uuid.UUID { return TagShard(id, ps.ShardOf(tenant, ws)) })
	} else if shards != nil {
		db = shards.Engines()[0]
		packer = retrieval.New(db)
	}
	if packer != nil && cfg.Reranker != nil {
		packer.SetReranker(cfg.Reranker)
	}
	if packer != nil && cfg.LateInteraction != nil {
		packer.SetLateInteraction(cfg.LateInteraction)
	}
	return &Service{db: db, shards: shards, partial: partial, ctl: ctl, cfg: cfg, log: cfg.Logger, packer: packer,
		limiter:    ratelimit.New(cfg.RateWindow, cfg.Now),
		regLimiter: ratelimit.New(cfg.RegisterWindow, cfg.Now),
		stopUsage:  make(chan struct{}), usageDone: make(chan struct{})}
}

// Start starts the background work: the usage writer and the indexing
// workers, which resume the jobs a restart interrupted. Stop ends it. Call
// it once, before serving the data plane.
func (s *Service) Start() {
	go func() {
		defer close(s.usageDone)
		s.ctl.RunUsageWriter(s.stopUsage)
	}()
	s.jobs = newJobRunner(s, s.cfg.IndexWorkers)
}

// Stop lets the jobs being indexed finish and stops the workers (pending
// jobs resume at the next Start), then writes the last usage counts. The
// caller then closes the engine. It is safe to call more than once.
func (s *Service) Stop() {
	s.stopOnce.Do(func() {
		if s.jobs == nil {
			return
		}
		s.jobs.stop()
		close(s.stopUsage)
		<-s.usageDone
	})
}

// engine is the engine of workspace ws of tenant, or a *NotServedError.
func (s *Service) engine(tenant, ws string) (*engine.DB, error) { return s.shards.Engine(tenant, ws) }

// workspaceEngine is the engine of workspace ws of tenant, which must be
// a workspace id the engine accepts (checkWorkspace): an id that is not one
// is refused here, before any forwarding.
func (s *Service) workspaceEngine(tenant, ws string) (*engine.DB, error) {
	if err := engine.CheckID("workspace_id", ws, true); err != nil {
		return nil, err
	}
	db, err := s.engine(tenant, ws)
	if err != nil {
		return nil, err
	}
	if err := checkWorkspace(db, tenant, ws); err != nil {
		return nil, err
	}
	return db, nil
}

// newArtifactID is the id of a new artifact of workspace ws of tenant:
// random (v4), tagged with its shard when the node serves only some
// shards; uuid.Nil (the engine draws one) otherwise.
func (s *Service) newArtifactID(tenant, ws string) uuid.UUID {
	if s.partial == nil {
		return uuid.Nil
	}
	return TagShard(uuid.New(), s.partial.ShardOf(tenant, ws))
}

// byID lists the engines that may hold an object of tenant known by id
// alone: every engine, or with partial replication the id's shard's (a
// *NotServedError when it is served elsewhere; none for an id whose tag
// names no shard, which this cluster did not mint).
func (s *Service) byID(id uuid.UUID) ([]*engine.DB, error) {
	if s.partial == nil {
		return s.shards.Engines(), nil
	}
	k := IDShard(id)
	if k >= s.partial.ShardCount() {
		return nil, nil
	}
	db, err := s.partial.ShardEngine(k)
	if err != nil {
		return nil, err
	}
	return []*engine.DB{db}, nil
}

// artifact finds an artifact of tenant by id alone, in whichever engine
// holds it, or engine.ErrNotFound (or a *NotServedError).
func (s *Service) artifact(tenant string, id uuid.UUID) (*engine.DB, *artifact.Artifact, error) {
	dbs, err := s.byID(id)
	if err != nil {
		return nil, nil, err
	}
	for _, db := range dbs {
		a, err := db.Artifact(tenant, id)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		return db, a, err
	}
	return nil, nil, engine.ErrNotFound
}

// receipt finds a receipt of tenant by id alone and returns its body as
// served (retrieval.ReceiptBody), or engine.ErrNotFound (or a
// *NotServedError).
func (s *Service) receipt(tenant string, id uuid.UUID) ([]byte, error) {
	dbs, err := s.byID(id)
	if err != nil {
		return nil, err
	}
	for _, db := range dbs {
		r, err := db.GetReceipt(tenant, id)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return retrieval.ReceiptBody(db, r)
	}
	return nil, engine.ErrNotFound
}

// workspaces lists tenant's workspaces over the engines this node serves,
// by id; with partial replication, only shards is nil or lists the shards
// to list (those not served here are refused with a *NotServedError), and
// elsewhere names, for every other shard, where it is served.
func (s *Service) workspaces(tenant string, only []int) (all []engine.WorkspaceSummary, elsewhere []*NotServedError, err error) {
	var dbs []*engine.DB
	if s.partial == nil {
		if only != nil {
			return nil, nil, &InvalidError{Field: "X-Loci-Shards", Reason: "this node serves every shard; a listing restricted to some is for partially replicated clusters"}
		}
		dbs = s.shards.Engines()
	} else {
		shards := only
		if shards == nil {
			shards = make([]int, s.partial.ShardCount())
			for k := range shards {
				shards[k] = k
			}
		}
		for _, k := range shards {
			if k < 0 || k >= s.partial.ShardCount() {
				return nil, nil, &InvalidError{Field: "X-Loci-Shards", Reason: fmt.Sprintf("shard %d: this cluster has shards 0 to %d", k, s.partial.ShardCount()-1)}
			}
			db, err := s.partial.ShardEngine(k)
			var ns *NotServedError
			switch {
			case errors.As(err, &ns) && only == nil:
				elsewhere = append(elsewhere, ns)
			case err != nil:
				return nil, nil, err
			default:
				dbs = append(dbs, db)
			}
		}
	}
	if len(dbs) == 1 && elsewhere == nil {
		all, err = dbs[0].Workspaces(tenant)
		return all, nil, err
	}
	for _, db := range dbs {
		list, err := db.Workspaces(tenant)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, list...)
	}
	slices.SortFunc(all, func(a, b engine.WorkspaceSummary) int { return strings.Compare(a.Workspace, b.Workspace) })
	return all, elsewhere, nil
}
