// Package cluster runs a Loci node as one replica of a cluster whose log is
// NATS JetStream (docs/cluster.md). Every write is published to a replicated
// stream and acknowledged once a quorum stored it and this node applied it;
// every node applies every stream, in stream order, into engines of its own
// (one per shard, and one for the control plane), whose sequence numbers are
// the stream's positions, so replicas reach the same state and answer the
// same request the same way. Membership is kept as key-value leases.
//
// The service layer sees a Node as its Shards (service.Shards): the engine
// of a workspace is its shard's engine.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of Config.
const (
	DefaultShards         = 16
	DefaultStreamReplicas = 3
	DefaultPublishTimeout = 5 * time.Second
	// LeaseTTL is how long a member's lease outlives its last renewal.
	LeaseTTL = 3 * time.Second
	// leaseRenew is how often a node renews its lease.
	leaseRenew = time.Second
	// dedupWindow is the streams' de-duplication window (Nats-Msg-Id).
	dedupWindow = 2 * time.Minute
	// minShardFlush is the least flush threshold of a shard's engine.
	minShardFlush = 4 << 20
	// MaxVersionWait bounds a read's wait for a data version it was asked
	// to reach (X-Loci-Min-Data-Version).
	MaxVersionWait = 5 * time.Second
)

// Names of the key-value buckets and streams.
const (
	clusterBucket = "loci_cluster" // key "shards": the shard count fixed at creation
	membersBucket = "loci_members" // key node id: its lease
	controlStream = "LOCI_CONTROL"
)

// errSettings refuses a node whose shard count, replica count or embedder
// is not the cluster's: waiting would not help.
var errSettings = errors.New("cluster: this node's settings differ from the cluster's")

// Config configures a Node.
type Config struct {
	// URLs are the NATS servers (any of them; the client finds the rest).
	URLs []string
	// NodeID names this node in the cluster: letters, digits, '-' and '_'.
	NodeID string
	// Addr is the API address other nodes and clients reach this node at,
	// published in its lease.
	Addr string
	// Shards is the number of shards (default DefaultShards). The first
	// node fixes it for the cluster; a node configured otherwise refuses to
	// start.
	Shards int
	// StreamReplicas is the replication factor of the streams (default 3,
	// at most the number of NATS servers).
	StreamReplicas int
	// Dir is the node's data directory: control/ and shard-NNN/ engines.
	Dir string
	// Engine is the options of every engine (Replicated and Control are set
	// here). Control is the control-plane state applied by the control engine.
	Engine  engine.Options
	Control *control.Store
	// PublishTimeout bounds the wait for a publish acknowledgement and for
	// this node's apply of the write (default DefaultPublishTimeout).
	PublishTimeout time.Duration
	// Replicas is how many nodes serve each shard (partial replication,
	// assign.go): 0, the default, has every node serve every shard. The
	// first node fixes it for the cluster; a node configured otherwise
	// refuses to start.
	Replicas int
	Logger   *slog.Logger
}

// Node is a running cluster member: a NATS connection, its engines and the
// appliers feeding them.
type Node struct {
	cfg      Config
	log      *slog.Logger
	nc       *nats.Conn
	js       jetstream.JetStream
	boot     string // distinguishes this process's publications
	shards   []*Shard
	ctl      *Shard
	members  jetstream.KeyValue
	settings jetstream.KeyValue // loci_cluster
	// secret marks requests one node forwards to another (ForwardSecret).
	secret string

	// CatchUpControl's readings of the control stream's last sequence: the
	// latest one begun (done or in flight), and how many were made.
	ctlMu       sync.Mutex
	ctlReading  *ctlReading
	ctlReadings atomic.Uint64

	// Partial replication (assign.go).
	view atomic.Pointer[memberView] // the live members, as last polled
	// leaseTrouble is when (Unix ns) this node last failed to renew its
	// own lease or to read the leases: while the bucket cannot be
	// written (its leader being elected after a NATS server died) no node
	// can renew, so a lease missing then says nothing of its node.
	leaseTrouble atomic.Int64
	leaseNow     chan struct{} // asks keepLease to publish the lease at once
	firstReady   chan struct{} // closed once the first assignment is ready
	onEngines    atomic.Pointer[func([]*engine.DB)]

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// ShardOf is the shard of workspace ws of tenant among n: FNV-1a (64 bit) of
// tenant, a zero byte and ws, modulo n. It never changes for a cluster.
func ShardOf(tenant, ws string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(ws))
	return int(h.Sum64() % uint64(n))
}

// Open connects to NATS, creates the streams and buckets a new cluster
// lacks, opens the node's engines and starts applying every stream from
// where each engine left off. It returns once every stream is applied up
// to its last message at the time of the call (the node has caught up), or
// ctx ends.
func Open(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Shards <= 0 {
		cfg.Shards = DefaultShards
	}
	if cfg.StreamReplicas <= 0 {
		cfg.StreamReplicas = DefaultStreamReplicas
	}
	if cfg.PublishTimeout <= 0 {
		cfg.PublishTimeout = DefaultPublishTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := checkNodeID(cfg.NodeID); err != nil {
		return nil, err
	}
	if len(cfg.URLs) == 0 {
		return nil, errors.New("cluster: no NATS server URL")
	}
	nc, err := nats.Connect(strings.Join(cfg.URLs, ","), nats.Name("loci-"+cfg.NodeID), nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond), nats.RetryOnFailedConnect(true), nats.Timeout(2*time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				cfg.Logger.Warn("cluster: disconnected from NATS", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			cfg.Logger.Info("cluster: reconnected to NATS", "server", c.ConnectedUrlRedacted())
		}))
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to NATS %s: %w", strings.Join(cfg.URLs, ","), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if cfg.Replicas < 0 {
		nc.Close()
		return nil, fmt.Errorf("cluster: replicas %d: want 0 (every node serves every shard) or more", cfg.Replicas)
	}
	n := &Node{cfg: cfg, log: cfg.Logger, nc: nc, js: js, boot: uuid.NewString()[:8],
		leaseNow: make(chan struct{}, 1), firstReady: make(chan struct{})}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.open(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// natsTooOld reports whether a nats-server version ("2.9.10") is older than
// 2.10, whose releases fixed stream replicas that diverged after a loss of
// quorum. An unparsable version is not judged.
func natsTooOld(v string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major < 2 || major == 2 && minor < 10
}

func checkNodeID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("cluster: node id %q: want 1 to 64 letters, digits, '-' or '_'", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("cluster: node id %q: want 1 to 64 letters, digits, '-' or '_'", id)
		}
	}
	return nil
}

func (n *Node) open(ctx context.Context) error {
	if err := n.setup(ctx); err != nil {
		return err
	}
	if v := n.nc.ConnectedServerVersion(); natsTooOld(v) {
		n.log.Warn("cluster: nats-server is older than 2.10: after a loss of quorum its stream replicas can diverge, and a read at a data version can then miss an acknowledged write; run 2.10 or later (docs/cluster.md, NATS version)",
			"server_version", v, "server", n.nc.ConnectedUrlRedacted())
	}
	ctlOpts := n.cfg.Engine
	ctlOpts.Replicated, ctlOpts.Control = true, n.cfg.Control
	n.ctl = newShard(n, -1, controlStream, "loci.control", filepath.Join(n.cfg.Dir, "control"), ctlOpts)
	if err := n.ctl.open(); err != nil {
		return err
	}
	if err := n.checkEmbedder(ctx, n.ctl.engine()); err != nil {
		return err
	}
	opts := n.cfg.Engine
	opts.Replicated, opts.Control = true, nil
	// The node holds a head per shard: share the flush threshold among
	// them, so that the heads together take what one engine's would.
	if opts.FlushThreshold > 0 {
		opts.FlushThreshold = max(opts.FlushThreshold/int64(n.cfg.Shards), minShardFlush)
	}
	for k := 0; k < n.cfg.Shards; k++ {
		n.shards = append(n.shards, newShard(n, k, shardStream(k), shardSubject(k), filepath.Join(n.cfg.Dir, fmt.Sprintf("shard-%03d", k)), opts))
	}
	if n.partial() {
		return n.openPartial(ctx)
	}
	for _, s := range n.shards {
		if err := s.open(); err != nil {
			return err
		}
	}
	// The targets are read before any applier starts, so catching up means
	// reaching what was in the streams when the node started.
	all := append([]*Shard{n.ctl}, n.shards...)
	targets := make([]uint64, len(all))
	for i, s := range all {
		info, err := n.streamInfo(ctx, s.stream)
		if err != nil {
			return err
		}
		s.handle.Store(&info)
		targets[i] = info.CachedInfo().State.LastSeq
	}
	for _, s := range all {
		n.wg.Add(1)
		go s.run(n.ctx)
	}
	for i, s := range all {
		if err := s.waitApplied(ctx, targets[i]); err != nil {
			return fmt.Errorf("cluster: catching up with %s (to %d, at %d): %w", s.stream, targets[i], s.Applied(), err)
		}
		s.ready.Store(true)
	}
	n.wg.Add(2)
	go n.keepLease()
	go n.watchStreams()
	n.log.Info("cluster: node caught up", "node", n.cfg.NodeID, "shards", n.cfg.Shards, "control_applied", n.ctl.Applied())
	return nil
}

// jetStreamAttempt bounds each JetStream request while a node opens. A
// request whose reply never comes (the server or stream leader it reached
// hangs, or a leader is being elected) is asked again, rather than waiting
// out the caller's whole deadline on it.
const jetStreamAttempt = 2 * time.Second

// retry runs one JetStream request f, each attempt bounded by
// jetStreamAttempt, until it succeeds, fails for good (errSettings) or ctx
// ends: a node may start before the NATS cluster has elected its leaders,
// and waits for JetStream rather than giving up.
func (n *Node) retry(ctx context.Context, what string, f func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, jetStreamAttempt)
		err := f(actx)
		cancel()
		if err == nil || errors.Is(err, errSettings) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("cluster: %s: %w (last: %v)", what, ctx.Err(), err)
		}
		if attempt%10 == 1 {
			n.log.Warn("cluster: waiting for JetStream", "for", what, "attempt", attempt, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// streamInfo reads a stream's info, asking again while no reply comes.
func (n *Node) streamInfo(ctx context.Context, stream string) (info jetstream.Stream, err error) {
	err = n.retry(ctx, "stream "+stream, func(ctx context.Context) (err error) {
		info, err = n.js.Stream(ctx, stream)
		return err
	})
	return info, err
}

// setup creates what a new cluster lacks (the buckets and streams) and
// checks the shard count against the cluster's. Each request is retried
// by itself, so that one unanswered request costs one attempt, not a
// restart of the whole setup.
func (n *Node) setup(ctx context.Context) error {
	var err error
	if n.settings, err = n.bucket(ctx, jetstream.KeyValueConfig{Bucket: clusterBucket, Replicas: n.cfg.StreamReplicas,
		Storage: jetstream.FileStorage, Description: "Loci cluster settings"}); err != nil {
		return err
	}
	want := strconv.Itoa(n.cfg.Shards)
	got, err := n.setting(ctx, "shards", "the shard count", want)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w: this cluster has %s shards, this node is configured with %s (--cluster-shards): a workspace's shard must never change", errSettings, got, want)
	}
	// Every node must assign shards alike (and tag ids alike), so the
	// replica count is the cluster's too. A cluster created before the
	// setting existed had every node serve every shard.
	wantR := strconv.Itoa(n.cfg.Replicas)
	gotR, err := n.setting(ctx, "replicas", "the replica count", wantR)
	if err != nil {
		return err
	}
	if gotR != wantR {
		return fmt.Errorf("%w: this cluster has %s replicas per shard, this node is configured with %s (--cluster-replicas; 0: every node serves every shard)", errSettings, gotR, wantR)
	}
	// The forwarding secret: a random value every node reads from the
	// bucket, so that only a node (or whoever can read the cluster's NATS
	// buckets) can mark a request as forwarded.
	if n.secret, err = n.setting(ctx, "forward-secret", "the forwarding secret", uuid.NewString()+uuid.NewString()); err != nil {
		return err
	}
	if n.members, err = n.bucket(ctx, jetstream.KeyValueConfig{Bucket: membersBucket, Replicas: n.cfg.StreamReplicas,
		Storage: jetstream.MemoryStorage, TTL: LeaseTTL, History: 1, Description: "Loci node leases"}); err != nil {
		return err
	}
	streams := []jetstream.StreamConfig{{Name: controlStream, Subjects: []string{"loci.control"}}}
	for k := 0; k < n.cfg.Shards; k++ {
		streams = append(streams, jetstream.StreamConfig{Name: shardStream(k), Subjects: []string{shardSubject(k)}})
	}
	for _, sc := range streams {
		sc.Replicas, sc.Storage, sc.Duplicates = n.cfg.StreamReplicas, jetstream.FileStorage, dedupWindow
		sc.Retention, sc.Discard = jetstream.LimitsPolicy, jetstream.DiscardNew
		sc.AllowDirect = true // reads by sequence from any replica (Shard.readDirect)
		if err := n.stream(ctx, sc); err != nil {
			return err
		}
	}
	return nil
}

// stream creates a stream unless it exists. Nodes starting together race
// to create it; JetStream keeps one, and the others find it. An existing
// stream is left as it is (an operator may have tuned it).
func (n *Node) stream(ctx context.Context, sc jetstream.StreamConfig) error {
	return n.retry(ctx, "stream "+sc.Name, func(ctx context.Context) error {
		_, err := n.js.Stream(ctx, sc.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			_, err = n.js.CreateStream(ctx, sc)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				_, err = n.js.Stream(ctx, sc.Name)
			}
		}
		return err
	})
}

// bucket opens a key-value bucket, creating it unless it exists.
func (n *Node) bucket(ctx context.Context, cfg jetstream.KeyValueConfig) (kv jetstream.KeyValue, err error) {
	err = n.retry(ctx, "key-value bucket "+cfg.Bucket, func(ctx context.Context) (err error) {
		kv, err = n.js.KeyValue(ctx, cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = n.js.CreateKeyValue(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				kv, err = n.js.KeyValue(ctx, cfg.Bucket)
			}
		}
		return err
	})
	return kv, err
}

// checkEmbedder refuses a node whose embedder is not the cluster's (the
// first node's): vectors travel in the records, computed by whichever node
// took the write, and a model's vectors cannot be searched with another's.
func (n *Node) checkEmbedder(ctx context.Context, db *engine.DB) error {
	emb := "none"
	if m := db.Embedder(); m != nil {
		emb = fmt.Sprintf("%s/%d", m.Model(), m.Dim())
	}
	got, err := n.setting(ctx, "embedder", "the embedder", emb)
	if err != nil {
		return err
	}
	if got != emb {
		return fmt.Errorf("%w: this cluster's nodes embed with %s, this node with %s (--embedder)", errSettings, got, emb)
	}
	return nil
}

// setting records value under key in loci_cluster unless a node recorded
// one first, and returns the recorded value (what names it in errors). A
// key just created by another node may not be readable yet from the
// replica that answers (key-value reads are served by any replica), so a
// missing key is read again.
func (n *Node) setting(ctx context.Context, key, what, value string) (got string, err error) {
	if err := n.retry(ctx, what, func(ctx context.Context) error {
		_, err := n.settings.Create(ctx, key, []byte(value))
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil
		}
		return err
	}); err != nil {
		return "", err
	}
	err = n.retry(ctx, what, func(ctx context.Context) error {
		for {
			e, err := n.settings.Get(ctx, key)
			if err == nil {
				got = string(e.Value())
				return nil
			}
			if !errors.Is(err, jetstream.ErrKeyNotFound) {
				return err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w (key %s still not readable)", ctx.Err(), key)
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	return got, err
}

func shardStream(k int) string  { return fmt.Sprintf("LOCI_SHARD_%d", k) }
func shardSubject(k int) string { return fmt.Sprintf("loci.shard.%d", k) }

// Engine is the engine of workspace ws of tenant (service.Shards), or,
// when this node does not serve its shard (partial replication), a
// *service.NotServedError naming a node that does.
func (n *Node) Engine(tenant, ws string) (*engine.DB, error) {
	return n.ShardEngine(ShardOf(tenant, ws, len(n.shards)))
}

// ShardEngine is the engine of shard k, or a *service.NotServedError.
func (n *Node) ShardEngine(k int) (*engine.DB, error) {
	if k < 0 || k >= len(n.shards) {
		return nil, fmt.Errorf("cluster: no shard %d (of %d)", k, len(n.shards))
	}
	s := n.shards[k]
	if s.ready.Load() {
		return s.engine(), nil
	}
	return nil, n.notServed(k)
}

// Engines is the engine of every shard this node serves, in shard order
// (service.Shards): every shard's, unless replication is partial.
func (n *Node) Engines() []*engine.DB {
	out := make([]*engine.DB, 0, len(n.shards))
	for _, s := range n.shards {
		if s.ready.Load() {
			out = append(out, s.engine())
		}
	}
	return out
}

// ControlEngine is the engine that applies the control stream.
func (n *Node) ControlEngine() *engine.DB { return n.ctl.engine() }

// ShardCount is the cluster's number of shards.
func (n *Node) ShardCount() int { return len(n.shards) }

// ShardOf is the shard of workspace ws of tenant in this cluster.
func (n *Node) ShardOf(tenant, ws string) int { return ShardOf(tenant, ws, len(n.shards)) }

// Partial reports whether each node serves only some shards (Replicas > 0).
func (n *Node) Partial() bool { return n.partial() }

func (n *Node) partial() bool { return n.cfg.Replicas > 0 }

// ForwardSecret is the value that marks a request forwarded by a node of
// this cluster to another (the same on every node).
func (n *Node) ForwardSecret() string { return n.secret }

// OnEngines makes fn see the set of engines this node serves (Engines)
// whenever it changes (metrics).
func (n *Node) OnEngines(fn func([]*engine.DB)) {
	n.onEngines.Store(&fn)
	fn(n.Engines())
}

func (n *Node) enginesChanged() {
	if fn := n.onEngines.Load(); fn != nil {
		(*fn)(n.Engines())
	}
}

// DataVersion is what this node has applied: the control stream's and each
// shard stream's last applied sequence (Shard.Position), joined by dots. A
// client that sends it back as X-Loci-Min-Data-Version to any node reads at
// least what this node could have served before (its own writes included,
// and a write it answered as an idempotent replay while applying it).
func (n *Node) DataVersion() string {
	b := make([]byte, 0, 8*(len(n.shards)+1))
	b = strconv.AppendUint(b, n.ctl.Position(), 10)
	for _, s := range n.shards {
		b = append(b, '.')
		b = strconv.AppendUint(b, s.Position(), 10)
	}
	return string(b)
}

// WaitDataVersion waits until this node has applied at least version (see
// DataVersion), at most MaxVersionWait or until ctx ends.
func (n *Node) WaitDataVersion(ctx context.Context, version string) error {
	parts := strings.Split(version, ".")
	if len(parts) != len(n.shards)+1 {
		return fmt.Errorf("X-Loci-Min-Data-Version: %q has %d parts, this cluster's versions have %d (control and %d shards)", version, len(parts), len(n.shards)+1, len(n.shards))
	}
	want := make([]uint64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return fmt.Errorf("X-Loci-Min-Data-Version: %q: part %d is not a number", version, i)
		}
		want[i] = v
	}
	ctx, cancel := context.WithTimeout(ctx, MaxVersionWait)
	defer cancel()
	all := append([]*Shard{n.ctl}, n.shards...)
	for i, s := range all {
		// A shard this node does not serve is not waited for: its requests
		// are forwarded, with the header, to a node that serves it.
		if i > 0 && n.partial() && !s.ready.Load() {
			continue
		}
		if err := s.waitApplied(ctx, want[i]); err != nil {
			return &VersionError{Version: version}
		}
	}
	return nil
}

// CatchUpControl waits until this node has applied every message the
// control stream held when the call began, at most MaxVersionWait or until
// ctx ends or the node closes. The service calls it before it refuses an
// API key this node does not know (service.ControlCatchUp): keys live in
// the control stream, and a key just registered or created through another
// node (a client behind a load balancer that sends no
// X-Loci-Min-Data-Version) reaches this one a moment later.
func (n *Node) CatchUpControl(ctx context.Context) error {
	arrived := time.Now()
	ctx, cancel := context.WithTimeout(ctx, MaxVersionWait)
	defer cancel()
	defer context.AfterFunc(n.ctx, cancel)() // nor past the node's close
	last, err := n.controlLast(ctx, arrived)
	if err != nil {
		return err
	}
	n.ctl.sawLast(last)
	if err := n.ctl.waitApplied(ctx, last); err != nil {
		return &VersionError{Version: fmt.Sprintf("control stream %d", last)}
	}
	return nil
}

// ctlReading is one reading of the control stream's last sequence.
type ctlReading struct {
	start time.Time
	done  chan struct{} // closed once last and err are set
	last  uint64
	err   error
}

// controlLast returns the control stream's last sequence as read by a
// reading that began at or after arrived. Readings are made one at a time
// and shared: a caller joins the latest one if it began in time, waits for
// one in flight that began too early and then joins or makes the next, so
// a flood of unknown keys costs the NATS servers one request at a time,
// and every caller still waits no longer than its ctx.
func (n *Node) controlLast(ctx context.Context, arrived time.Time) (uint64, error) {
	for {
		n.ctlMu.Lock()
		r := n.ctlReading
		inFlight := r != nil && !closed(r.done)
		if r != nil && (inFlight || !r.start.Before(arrived)) {
			n.ctlMu.Unlock()
			select {
			case <-r.done:
			case <-ctx.Done():
				return 0, &VersionError{Version: "the control stream's last"}
			}
			if !r.start.Before(arrived) {
				return r.last, r.err
			}
			continue // it began before this call: the next one
		}
		r = &ctlReading{start: time.Now(), done: make(chan struct{})}
		n.ctlReading = r
		n.ctlMu.Unlock()
		n.ctlReadings.Add(1)
		// Under the node's context, not the caller's: the reading serves
		// the callers that join it, whoever made it.
		rctx, cancel := context.WithTimeout(n.ctx, MaxVersionWait)
		st, err := n.js.Stream(rctx, n.ctl.stream)
		cancel()
		if err != nil {
			r.err = fmt.Errorf("cluster: reading the control stream's position: %w", err)
		} else {
			r.last = st.CachedInfo().State.LastSeq
		}
		close(r.done)
		return r.last, r.err
	}
}

// closed reports whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// VersionError refuses a request whose X-Loci-Min-Data-Version this node has
// not reached within MaxVersionWait. It unwraps to engine.ErrUnavailable
// (the transports answer 503 with Retry-After).
type VersionError struct{ Version string }

func (e *VersionError) Error() string {
	return fmt.Sprintf("this node has not applied data version %s (X-Loci-Min-Data-Version) within %s; retry, here or on another node", e.Version, MaxVersionWait)
}

func (e *VersionError) Unwrap() error { return engine.ErrUnavailable }

// Member is a live node, as its lease says.
type Member struct {
	NodeID string `json:"node_id"`
	Addr   string `json:"addr"`
	// Shards are the shards the node serves, caught up (partial
	// replication only).
	Shards []int `json:"shards,omitempty"`
}

// Members lists the live members (leases not expired), by node id.
func (n *Node) Members(ctx context.Context) ([]Member, error) {
	leases, err := n.leases(ctx)
	out := make([]Member, len(leases))
	for i, l := range leases {
		out[i] = l.Member
	}
	return out, err
}

// lease is a member's lease as read, with its revision (a renewal makes a
// new one).
type lease struct {
	Member
	rev uint64
}

// leases reads the leases, by node id. A lease that cannot be read for any
// reason but its expiry fails the whole read, so that a member is never
// taken for gone because of a read error.
func (n *Node) leases(ctx context.Context) ([]lease, error) {
	keys, err := n.members.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []lease
	for _, key := range keys {
		e, err := n.members.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue // expired or left between listing and reading
		}
		if err != nil {
			return nil, err
		}
		var m Member
		if json.Unmarshal(e.Value(), &m) == nil {
			out = append(out, lease{m, e.Revision()})
		}
	}
	slices.SortFunc(out, func(a, b lease) int { return strings.Compare(a.NodeID, b.NodeID) })
	return out, nil
}

// NodeID is this node's id.
func (n *Node) NodeID() string { return n.cfg.NodeID }

// keepLease renews the node's lease every leaseRenew until Close, and at
// once when the shards it serves change (leaseNow).
func (n *Node) keepLease() {
	defer n.wg.Done()
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		m := Member{NodeID: n.cfg.NodeID, Addr: n.cfg.Addr}
		if n.partial() {
			m.Shards = n.readyShards()
		}
		val, _ := json.Marshal(m)
		ctx, cancel := context.WithTimeout(n.ctx, leaseRenew)
		if _, err := n.members.Put(ctx, n.cfg.NodeID, val); err != nil && n.ctx.Err() == nil {
			n.leaseTrouble.Store(time.Now().UnixNano())
			n.log.Warn("cluster: lease not renewed", "err", err)
		}
		cancel()
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.leaseNow:
		}
	}
}

// readyShards lists the shards this node serves, in order.
func (n *Node) readyShards() []int {
	out := []int{}
	for k, s := range n.shards {
		if s.ready.Load() {
			out = append(out, k)
		}
	}
	return out
}

// Flush flushes every engine's head to segments (a clean stop: the next
// start replays no WAL).
func (n *Node) Flush() error {
	var errs []error
	for _, s := range n.all() {
		// A shard stopped by partial replication was flushed then.
		if db := s.engine(); db != nil && s.ready.Load() {
			errs = append(errs, db.Flush())
		}
	}
	return errors.Join(errs...)
}

func (n *Node) all() []*Shard {
	if n.ctl == nil {
		return n.shards
	}
	return append([]*Shard{n.ctl}, n.shards...)
}

// Close stops the appliers and the lease, closes the engines and the NATS
// connection. Writes in flight fail with engine.ErrUnavailable or
// engine.ErrClosed.
func (n *Node) Close() error {
	n.cancel()
	n.wg.Wait()
	var errs []error
	for _, s := range n.all() {
		if db := s.engine(); db != nil {
			errs = append(errs, db.Close())
		}
	}
	if n.members != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n.members.Delete(ctx, n.cfg.NodeID) // leave at once rather than when the lease expires
		cancel()
	}
	n.nc.Close()
	return errors.Join(errs...)
}

// Status describes the node for /health: its id, the live members, the
// shard count, the data version it has applied and how far behind the
// streams it is.
func (n *Node) Status(ctx context.Context) any {
	st := struct {
		NodeID      string   `json:"node_id"`
		Shards      int      `json:"shards"`
		DataVersion string   `json:"data_version"`
		Members     []Member `json:"members"`
		NATS        string   `json:"nats"`
		Replicas    int      `json:"replicas,omitempty"`
		Serving     []int    `json:"serving,omitempty"`
		// Behind is how many messages of the streams it serves this node
		// has not applied yet; Lag details each stream behind.
		Behind uint64      `json:"behind"`
		Lag    []StreamLag `json:"lag,omitempty"`
	}{NodeID: n.cfg.NodeID, Shards: len(n.shards), DataVersion: n.DataVersion(), NATS: n.nc.Status().String(), Lag: n.Lag()}
	for _, l := range st.Lag {
		st.Behind += l.Behind
	}
	if n.partial() {
		st.Replicas, st.Serving = n.cfg.Replicas, n.readyShards()
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st.Members, _ = n.Members(ctx)
	return st
}
