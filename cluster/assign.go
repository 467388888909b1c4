package cluster

// Partial replication (Config.Replicas = R > 0): each shard is served by R
// nodes, chosen by rendezvous hashing over the live members, and a node
// holds on its disk only the shards it serves or served.
//
// A node's lease lists the shards it serves and has caught up ("ready").
// Every node polls the leases (membershipPoll) and assigns the shards from
// what it sees: shard k goes to the R live members with the highest
// rendezvous score (score). An assigned shard is opened (its engine resumes
// from its own position) and applied; it becomes ready once applied up to
// the stream's last sequence at the time its applier started, and the lease
// then says so. A shard no longer assigned keeps being applied and served
// until every node it is assigned to lists it as ready, for surplusGrace
// without interruption; then it leaves the lease, and after drainDelay (for
// requests that had already picked its engine) its applier stops and its
// engine closes. Its data stays on disk: if the shard comes back, the node
// resumes from there.
//
// Requests for a shard this node does not serve get a
// *service.NotServedError naming the first live member in rendezvous order
// whose lease lists the shard ready; the transport forwards them there.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/loci-memory/loci/service"
)

const (
	// membershipPoll is how often a node reads the leases and reassigns.
	membershipPoll = 500 * time.Millisecond
	// surplusGrace is how long every assigned node must list a shard ready
	// before a node it is no longer assigned to stops serving it.
	surplusGrace = LeaseTTL
)

// memberView is the live members as last polled, by node id.
type memberView struct {
	members []Member // by node id
	ready   map[string]map[int]bool
}

func newView(members []Member) *memberView {
	v := &memberView{members: members, ready: map[string]map[int]bool{}}
	for _, m := range members {
		r := map[int]bool{}
		for _, k := range m.Shards {
			r[k] = true
		}
		v.ready[m.NodeID] = r
	}
	return v
}

// score is node id's rendezvous score for shard k: FNV-1a (64 bit) of the
// shard number (8 bytes, big endian) and the node id.
func score(k int, id string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(k))
	h.Write(b[:])
	h.Write([]byte(id))
	return h.Sum64()
}

// rank orders node ids for shard k, highest score first (ties by id).
func rank(k int, ids []string) []string {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int {
		sa, sb := score(k, a), score(k, b)
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// assigned is the nodes shard k is assigned to among ids: the first
// replicas of rank (all of them when there are fewer).
func assigned(k, replicas int, ids []string) []string {
	r := rank(k, ids)
	return r[:min(replicas, len(r))]
}

// notServed names where shard k is served: the first live member in
// rendezvous order (other than this node) whose lease lists it ready.
func (n *Node) notServed(k int) error {
	e := &service.NotServedError{Shard: k}
	v := n.view.Load()
	if v == nil {
		return e
	}
	ids := make([]string, 0, len(v.members))
	addr := map[string]string{}
	for _, m := range v.members {
		ids = append(ids, m.NodeID)
		addr[m.NodeID] = m.Addr
	}
	for _, id := range rank(k, ids) {
		switch {
		case id == n.cfg.NodeID || !v.ready[id][k]:
		case e.NodeID == "":
			e.NodeID, e.Addr = id, addr[id]
		default:
			e.Alternates = append(e.Alternates, service.NodeAddr{NodeID: id, Addr: addr[id]})
		}
	}
	return e
}

// openPartial is Open's second half with partial replication: the control
// stream is caught up, the lease published, and after one lease TTL (so
// that nodes starting together see each other before the first
// assignment) the assigned shards are caught up.
func (n *Node) openPartial(ctx context.Context) error {
	info, err := n.streamInfo(ctx, n.ctl.stream)
	if err != nil {
		return err
	}
	target := info.CachedInfo().State.LastSeq
	n.wg.Add(1)
	go n.ctl.run(n.ctx)
	if err := n.ctl.waitApplied(ctx, target); err != nil {
		return fmt.Errorf("cluster: catching up with %s (to %d, at %d): %w", n.ctl.stream, target, n.ctl.Applied(), err)
	}
	n.ctl.ready.Store(true)
	n.wg.Add(3)
	go n.keepLease()
	go n.manage()
	go n.watchStreams()
	select {
	case <-n.firstReady:
	case <-ctx.Done():
		return fmt.Errorf("cluster: catching up with the assigned shards: %w", ctx.Err())
	}
	n.log.Info("cluster: node caught up", "node", n.cfg.NodeID, "shards", n.cfg.Shards, "replicas", n.cfg.Replicas,
		"serving", n.readyShards(), "control_applied", n.ctl.Applied())
	return nil
}

// manage polls the leases and assigns shards until the node closes.
func (n *Node) manage() {
	defer n.wg.Done()
	defer n.stopAll()
	start := time.Now()
	t := time.NewTicker(membershipPoll)
	defer t.Stop()
	first := true
	seen := map[string]*sighting{}
	failures := 0 // reads of the leases failed in a row
	for {
		members, err := n.pollMembers(seen, time.Now())
		if err == nil {
			failures = 0
			n.view.Store(newView(members))
			if time.Since(start) >= LeaseTTL {
				changed := n.reassign(members, time.Now())
				if changed {
					n.enginesChanged()
					select {
					case n.leaseNow <- struct{}{}:
					default:
					}
				}
				if first && n.assignmentReady(members) {
					first = false
					close(n.firstReady)
				}
			}
		} else {
			n.leaseTrouble.Store(time.Now().UnixNano())
			if failures++; n.ctx.Err() == nil && failures%20 == 1 {
				// The assignment stays as it is until the leases are read.
				n.log.Warn("cluster: members not read; the shards served stay as they are", "failures", failures, "err", err)
			}
		}
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollMembers reads the leases and returns the live members. A member
// whose lease is missing from one read is kept while its lease cannot
// have expired yet (LeaseTTL after this node last saw it renewed): a read
// of the bucket may miss a key being rewritten, and a member must not
// seem gone (its shards reassigned) for that. Nor is a lease missing
// while this node itself could not renew its own or read the leases
// (leaseTrouble: the bucket electing a leader after a NATS server died,
// when every lease expires alike) held against its node: its absence
// counts from LeaseTTL after the trouble. A member that stops cleanly
// deletes its lease and is gone from the view LeaseTTL later.
func (n *Node) pollMembers(seen map[string]*sighting, now time.Time) ([]Member, error) {
	ctx, cancel := context.WithTimeout(n.ctx, 2*time.Second)
	defer cancel()
	leases, err := n.leases(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range leases {
		s := seen[l.NodeID]
		if s == nil || s.rev != l.rev {
			seen[l.NodeID] = &sighting{member: l.Member, rev: l.rev, at: now}
		}
	}
	trouble := time.Unix(0, n.leaseTrouble.Load())
	var members []Member
	for id, s := range seen {
		since := s.at
		if trouble.After(since) {
			since = trouble
		}
		if now.Sub(since) >= LeaseTTL && !slices.ContainsFunc(leases, func(l lease) bool { return l.NodeID == id }) {
			delete(seen, id)
			continue
		}
		members = append(members, s.member)
	}
	// This node counts itself as soon as it starts managing, whether or
	// not its first lease was read back yet.
	if !slices.ContainsFunc(members, func(m Member) bool { return m.NodeID == n.cfg.NodeID }) {
		members = append(members, Member{NodeID: n.cfg.NodeID, Addr: n.cfg.Addr})
	}
	slices.SortFunc(members, func(a, b Member) int { return strings.Compare(a.NodeID, b.NodeID) })
	return members, nil
}

// sighting is the last renewal of a member's lease this node saw.
type sighting struct {
	member Member
	rev    uint64
	at     time.Time // when this node first read revision rev
}

// assignmentReady reports whether every shard assigned to this node is
// ready.
func (n *Node) assignmentReady(members []Member) bool {
	ids := memberIDs(members)
	for k, s := range n.shards {
		if slices.Contains(assigned(k, n.cfg.Replicas, ids), n.cfg.NodeID) && !s.ready.Load() {
			return false
		}
	}
	return true
}

func memberIDs(members []Member) []string {
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.NodeID
	}
	return ids
}

// reassign moves every shard one step towards its assignment among members
// at now, and reports whether the set of shards served here changed.
func (n *Node) reassign(members []Member, now time.Time) bool {
	ids := memberIDs(members)
	view := newView(members)
	drain := max(n.cfg.PublishTimeout, 5*time.Second)
	changed := false
	for k, s := range n.shards {
		to := assigned(k, n.cfg.Replicas, ids)
		mine := slices.Contains(to, n.cfg.NodeID)
		switch {
		case mine && !s.active:
			if err := n.startShard(s); err != nil {
				if s.startFailures++; s.startFailures%20 == 1 {
					n.log.Error("cluster: cannot start a shard assigned to this node; retrying", "shard", k, "attempts", s.startFailures, "err", err)
				}
			} else {
				s.startFailures = 0
			}
		case mine && !s.droppedAt.IsZero():
			// Assigned again while draining: catch up anew before serving.
			s.droppedAt, s.target = time.Time{}, 0
			if err := n.setTarget(s); err != nil {
				n.log.Warn("cluster: shard target not read", "shard", k, "err", err)
			}
		case !mine && s.active && s.ready.Load():
			allReady := true
			for _, id := range to {
				if !view.ready[id][k] {
					allReady = false
				}
			}
			switch {
			case !allReady:
				s.surplusSince = time.Time{}
			case s.surplusSince.IsZero():
				s.surplusSince = now
			case now.Sub(s.surplusSince) >= surplusGrace:
				n.log.Info("cluster: shard handed over; no longer served here", "shard", k, "served_by", to)
				s.ready.Store(false)
				s.droppedAt, s.surplusSince = now, time.Time{}
				changed = true
			}
		case !mine && s.active && s.droppedAt.IsZero():
			// Assigned elsewhere before it caught up: it serves nobody.
			n.stopShard(s)
		case !mine && s.active && now.Sub(s.droppedAt) >= drain:
			n.stopShard(s)
		}
		if mine {
			s.surplusSince = time.Time{}
		}
		if s.active && !s.ready.Load() && s.droppedAt.IsZero() && s.target > 0 && s.Applied() >= s.target {
			s.ready.Store(true)
			changed = true
			n.log.Info("cluster: shard caught up; serving it", "shard", k, "applied", s.Applied())
		}
		if s.active && s.target == 0 && s.droppedAt.IsZero() && !s.ready.Load() {
			if err := n.setTarget(s); err != nil {
				n.log.Warn("cluster: shard target not read", "shard", k, "err", err)
			}
		}
	}
	return changed
}

// setTarget reads the stream's last sequence: the shard is caught up once
// applied up to it. An empty stream's target is 1 with nothing to apply,
// so it is caught up at once (Applied is then 0: target stays meaningful
// by being compared after the read).
func (n *Node) setTarget(s *Shard) error {
	ctx, cancel := context.WithTimeout(n.ctx, 2*time.Second)
	defer cancel()
	st, err := n.js.Stream(ctx, s.stream)
	if err != nil {
		return err
	}
	s.handle.Store(&st)
	last := st.CachedInfo().State.LastSeq
	if last == 0 {
		// Nothing to catch up with: ready at once.
		s.target = 0
		s.ready.Store(true)
		n.log.Info("cluster: shard caught up; serving it", "shard", s.index, "applied", s.Applied())
		n.enginesChanged()
		select {
		case n.leaseNow <- struct{}{}:
		default:
		}
		return nil
	}
	s.target = last
	return nil
}

// startShard opens a shard assigned to this node and starts its applier.
func (n *Node) startShard(s *Shard) error {
	if !s.opened {
		if err := s.open(); err != nil {
			return err
		}
		s.opened = true
	}
	ctx, cancel := context.WithCancel(n.ctx)
	s.active, s.stopApplier, s.applierDone = true, cancel, make(chan struct{})
	s.target, s.droppedAt, s.surplusSince = 0, time.Time{}, time.Time{}
	done := s.applierDone
	n.wg.Add(1)
	go func() {
		defer close(done)
		s.run(ctx)
	}()
	n.log.Info("cluster: shard assigned to this node; catching up", "shard", s.index, "applied", s.Applied())
	if err := n.setTarget(s); err != nil {
		// Read again at the next reassignment (target 0).
		n.log.Warn("cluster: shard target not read", "shard", s.index, "err", err)
	}
	return nil
}

// stopShard stops a shard's applier, flushes and closes its engine; its
// data stays on disk.
func (n *Node) stopShard(s *Shard) {
	s.ready.Store(false)
	s.stopApplier()
	<-s.applierDone
	s.active, s.target, s.droppedAt, s.surplusSince = false, 0, time.Time{}, time.Time{}
	db := s.engine()
	s.opened = false
	err := errors.Join(db.Flush(), db.Close())
	if err != nil {
		n.log.Warn("cluster: closing a shard no longer served", "shard", s.index, "err", err)
	}
	n.log.Info("cluster: shard stopped", "shard", s.index, "applied", s.Applied())
}

// stopAll stops every running applier (Close).
func (n *Node) stopAll() {
	for _, s := range n.shards {
		if s.active {
			s.stopApplier()
			<-s.applierDone
			s.active = false
		}
	}
}
