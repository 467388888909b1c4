package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/wal"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pubHeader names a node's own publication, so that its applier runs the
// write's own Apply functions (which hand results back to the writer) rather
// than decoded copies.
const pubHeader = "Loci-Pub"

// Shard is one stream and the engine that applies it: a data shard or the
// control plane. It is the engine's Replicator.
type Shard struct {
	node    *Node
	stream  string
	subject string
	index   int    // the shard's number; -1 for the control plane
	dir     string // the engine's directory
	opts    engine.Options
	db      atomic.Pointer[engine.DB] // nil until opened (partial replication opens on assignment)

	// ready: the engine is caught up and serves requests (always, with
	// every node serving every shard; see assign.go otherwise).
	ready atomic.Bool
	// Partial replication's state of the shard on this node, owned by the
	// membership loop (assign.go).
	opened        bool               // its engine is open
	startFailures int                // failed attempts to open it, in a row
	active        bool               // its applier runs
	stopApplier   context.CancelFunc // ends the applier
	applierDone   chan struct{}      // closed when the applier returns
	target        uint64             // the stream's last sequence when the applier started
	surplusSince  time.Time          // no longer assigned, and every assigned node ready, since
	droppedAt     time.Time          // left the ready set (the engine closes a drain period later)

	applied atomic.Uint64 // the last stream sequence applied
	// applying is the highest stream sequence handed to the engine: its
	// records may be readable (an idempotency key found, an artifact
	// listed) before applied moves to it.
	applying atomic.Uint64
	// last is the stream's last sequence as this node last learnt it
	// (consumer metadata, direct reads, publish acknowledgements, the
	// node's poll of the streams): applied is behind while it is lower.
	last atomic.Uint64
	// behindSince is when (Unix ns) this node learnt of a message it had not
	// applied, reset by every apply: 0 while caught up.
	behindSince atomic.Int64
	// restarts counts the applier's consumers re-created (metrics).
	restarts atomic.Uint64
	// handle reads messages by sequence (readDirect); nil until a stream
	// info answer gave one.
	handle atomic.Pointer[jetstream.Stream]
	// wanted is the highest sequence a writer or reader waits for, and
	// progress the time (Unix ns) the applier last moved or (re)started:
	// the watchdog re-creates a consumer that stalls while someone waits.
	wanted   atomic.Uint64
	progress atomic.Int64
	seq      atomic.Uint64 // numbers this node's publications (pubHeader)
	// engineApplied, when set (tests only), is called with a message's
	// sequence once the engine has applied it, before applied moves.
	engineApplied atomic.Pointer[func(uint64)]

	mu      sync.Mutex
	changed chan struct{}       // closed and replaced whenever applied moves
	pending map[string]*pending // this node's writes awaiting their apply, by pubHeader
}

// pending is a write this node published and waits to apply.
type pending struct {
	entries []wal.Entry
	done    chan struct{} // closed once applied
	at      uint64        // the stream sequence it was applied at, set before done closes
}

func newShard(n *Node, index int, stream, subject, dir string, opts engine.Options) *Shard {
	return &Shard{node: n, index: index, stream: stream, subject: subject, dir: dir, opts: opts,
		changed: make(chan struct{}), pending: map[string]*pending{}}
}

// open opens the shard's engine (replaying its local WAL) and makes the
// shard its replicator. Applied moves to the engine's position: it never
// goes back, since the engine holds every message applied before.
func (s *Shard) open() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	db, err := engine.Open(s.dir, s.opts)
	if err != nil {
		return fmt.Errorf("cluster: open %s: %w", s.dir, err)
	}
	db.SetReplicator(s)
	s.mu.Lock()
	s.applied.Store(max(s.applied.Load(), db.AppliedSeq()>>recordBits))
	s.mu.Unlock()
	s.db.Store(db)
	return nil
}

// engine is the shard's engine (nil before open).
func (s *Shard) engine() *engine.DB { return s.db.Load() }

// Applied is the last stream sequence this node applied.
func (s *Shard) Applied() uint64 { return s.applied.Load() }

// Position is the stream position an answer of this node reports
// (DataVersion): the last message applied, after the one being applied, if
// any, is applied too, since its records may be readable before applied
// moves (a retried write found by its idempotency key mid-apply must not be
// answered with a version below it). Should that apply take longer than
// settleWait, it is that message's sequence: a node asked for it waits
// until it has applied it.
func (s *Shard) Position() uint64 {
	v := s.applying.Load()
	if v <= s.Applied() {
		return s.Applied()
	}
	ctx, cancel := context.WithTimeout(s.node.ctx, settleWait)
	defer cancel()
	if s.waitApplied(ctx, v) != nil {
		return max(s.Applied(), v)
	}
	return s.Applied()
}

// settleWait bounds how long Position waits for an apply in progress.
const settleWait = time.Second

// sawLast notes that the stream holds a message at seq.
func (s *Shard) sawLast(seq uint64) {
	raise(&s.last, seq)
	if seq > s.Applied() {
		s.behindSince.CompareAndSwap(0, time.Now().UnixNano())
	}
}

// raise sets v to n if n is higher.
func raise(v *atomic.Uint64, n uint64) {
	for o := v.Load(); n > o && !v.CompareAndSwap(o, n); o = v.Load() {
	}
}

// Last is the stream's last sequence as this node last learnt it (at least
// what it applied).
func (s *Shard) Last() uint64 { return max(s.last.Load(), s.Applied()) }

// Lag is how many messages of the stream this node has not applied yet.
func (s *Shard) Lag() uint64 { return s.Last() - s.Applied() }

// stalledFor is how long the applier has been behind the stream without
// applying anything (0 when it is not behind).
func (s *Shard) stalledFor(now time.Time) time.Duration {
	since := s.behindSince.Load()
	if since == 0 || s.Lag() == 0 {
		return 0
	}
	return max(now.Sub(time.Unix(0, since)), 0)
}

// waitApplied waits until the stream is applied up to seq, or ctx ends.
func (s *Shard) waitApplied(ctx context.Context, seq uint64) error {
	raise(&s.wanted, seq)
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if s.applied.Load() >= seq {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// run applies the stream in order from the engine's position until ctx
// ends (the node closes, or partial replication stops the shard): through a
// consumer (consume) while one can be had, by direct reads in between.
func (s *Shard) run(ctx context.Context) {
	defer s.node.wg.Done()
	for ctx.Err() == nil {
		err := s.consume(ctx)
		if ctx.Err() != nil {
			return
		}
		s.restarts.Add(1)
		s.node.log.Warn("cluster: applier restarts", "stream", s.stream, "applied", s.Applied(), "last", s.Last(), "err", err)
		// Making a consumer needs JetStream's meta leader, which a dead
		// server may have been; reading by sequence needs only a replica of
		// the stream. Meanwhile, read directly what is there.
		if derr := s.readDirect(ctx, time.Second); derr != nil && ctx.Err() == nil {
			s.node.log.Debug("cluster: direct reads failed", "stream", s.stream, "err", derr)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// consume reads the stream from the last applied message with a consumer of
// its own: an ephemeral pull consumer, in stream order, without acks, held
// on one NATS server. Anything unexpected (missed heartbeats, a lost
// connection, a gap in the sequence) ends it, and run makes a new one from
// the last applied message, with short timeouts. nats.go's ordered consumer
// does the same by itself, but with retries of up to 10 s each and growing
// back-off that kept appliers still for tens of seconds after the JetStream
// meta leader died.
func (s *Shard) consume(ctx context.Context) error {
	// Resume at the last applied message, not after it: a crash may have
	// left part of its records out of the WAL; ApplyReplicated skips those
	// it holds.
	start := max(s.Applied(), 1)
	cctx, cancel := context.WithTimeout(ctx, consumerTimeout)
	cons, err := s.node.js.CreateConsumer(cctx, s.stream, jetstream.ConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start,
		AckPolicy: jetstream.AckNonePolicy, MemoryStorage: true, Replicas: 1,
		InactiveThreshold: 30 * time.Second, // the server drops it if this node dies
	})
	cancel()
	if err != nil {
		return fmt.Errorf("create consumer: %w", err)
	}
	defer func() {
		name := cons.CachedInfo().Name
		go func() {
			dctx, cancel := context.WithTimeout(context.Background(), consumerTimeout)
			defer cancel()
			s.node.js.DeleteConsumer(dctx, s.stream, name) // best effort; InactiveThreshold otherwise
		}()
	}()
	// Short pulls with heartbeats: a consumer whose server died is noticed
	// after two missed heartbeats (a second).
	it, err := cons.Messages(jetstream.PullMaxMessages(256), jetstream.PullExpiry(2*time.Second),
		jetstream.PullHeartbeat(500*time.Millisecond))
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer it.Stop()
	s.progress.Store(time.Now().UnixNano())
	done := make(chan struct{})
	defer close(done)
	go s.watch(it, done)
	for {
		msg, err := it.Next()
		if err != nil {
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("message metadata: %w", err)
		}
		// The streams never delete a message, so their sequences have no
		// gaps: one here is a message lost in flight; start again before it.
		if n := meta.Sequence.Stream; n > s.Applied()+1 {
			return fmt.Errorf("message %d delivered after %d: a message was lost in flight", n, s.Applied())
		}
		s.sawLast(meta.Sequence.Stream + meta.NumPending)
		if err := s.apply(ctx, meta.Sequence.Stream, msg.Headers(), msg.Data()); err != nil {
			return err
		}
	}
}

// readDirect applies the messages after the last applied one by reading
// them by sequence (any replica answers when the stream allows direct
// reads), for at most d, until the next one is not there (yet).
func (s *Shard) readDirect(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	h := s.handle.Load()
	if h == nil {
		st, err := s.node.js.Stream(ctx, s.stream)
		if err != nil {
			return err
		}
		s.handle.Store(&st)
		h = &st
	}
	for {
		m, err := (*h).GetMsg(ctx, s.Applied()+1)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		s.sawLast(m.Sequence)
		if err := s.apply(ctx, m.Sequence, m.Header, m.Data); err != nil {
			return err
		}
	}
}

// consumerTimeout bounds creating or deleting an applier's consumer.
const consumerTimeout = 2 * time.Second

// stallAfter is how long an applier may make no progress while a writer or
// reader waits for a later message before its consumer is re-created (the
// heartbeats notice a dead server; this notices a consumer that is alive
// but not delivering).
const stallAfter = 2 * time.Second

// watch checks the applier until done: if the stream holds a message the
// applier has not reached (as far as this node knows: a writer or reader
// waits for it, or the stream said so) and it has not moved for
// stallAfter, it stops the iterator (consume returns and run re-creates the
// consumer). Nobody needs to wait: a node behind catches up by itself.
func (s *Shard) watch(it jetstream.MessagesContext, done <-chan struct{}) {
	t := time.NewTicker(stallAfter / 4)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if max(s.wanted.Load(), s.Last()) > s.Applied() && time.Since(time.Unix(0, s.progress.Load())) >= stallAfter {
			s.node.log.Warn("cluster: applier stalled; re-creating its consumer", "stream", s.stream, "applied", s.Applied(), "wanted", s.wanted.Load(), "last", s.Last())
			it.Stop()
			return
		}
	}
}

// apply applies the message at stream sequence n: records at n<<16 + i.
func (s *Shard) apply(ctx context.Context, n uint64, header nats.Header, data []byte) error {
	if n < s.Applied() {
		return nil // delivered again after a consumer reset
	}
	var p *pending
	if token := header.Get(pubHeader); token != "" {
		s.mu.Lock()
		p = s.pending[token]
		delete(s.pending, token)
		s.mu.Unlock()
	}
	var entries []wal.Entry
	var err error
	if p != nil {
		entries = p.entries
	} else if entries, err = decodeMessage(data); err != nil {
		// Every replica receives the same bytes and skips them alike.
		s.node.log.Error("cluster: message skipped", "stream", s.stream, "seq", n, "err", err)
		entries = nil
	}
	raise(&s.applying, n) // before the engine makes any of it readable
	db := s.engine()
	for attempt := 0; ; attempt++ {
		err := db.ApplyReplicated(n<<recordBits, entries)
		if err == nil {
			break
		}
		if errors.Is(err, engine.ErrClosed) {
			return err
		}
		if attempt%50 == 0 {
			s.node.log.Error("cluster: cannot apply; retrying", "stream", s.stream, "seq", n, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if fn := s.engineApplied.Load(); fn != nil {
		(*fn)(n)
	}
	now := time.Now().UnixNano()
	s.progress.Store(now)
	s.mu.Lock()
	s.applied.Store(n)
	if n >= s.last.Load() {
		s.behindSince.Store(0)
	} else {
		s.behindSince.Store(now) // still behind, but moving
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if p != nil {
		p.at = n
		close(p.done)
	}
	return nil
}
