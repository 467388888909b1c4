package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/wal"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// This file is the replication policy of a shard's writes: which copies are
// one write (message ids), what a publisher does when the stream holds its
// write already, and how long a receipt is waited for.

// Replicate publishes a write and waits for the quorum's acknowledgement
// and this node's apply (engine.Replicator). A receipt is published in the
// background (replicateReceipt).
func (s *Shard) Replicate(w engine.Write) error {
	if w.Receipt != uuid.Nil {
		return s.replicateReceipt(w)
	}
	return s.replicate(messageID(w), w.Entries, true)
}

// messageID is a write's de-duplication id (Nats-Msg-Id;
// docs/format/cluster-message.md): for an ingest, the hash of its
// idempotency keys when every stored artifact has one (a client's retry
// through any node is then the same message), else of its artifact ids (a
// write re-sent with the same ids, such as a job indexed again); for a
// receipt, its id (two nodes serving one pack make the same receipt); ""
// (the publisher's token) for other writes.
func messageID(w engine.Write) string {
	if w.Receipt != uuid.Nil {
		return "receipt:" + w.Receipt.String()
	}
	if len(w.Ingested) == 0 {
		return ""
	}
	h := sha256.New()
	keyed := true
	for _, a := range w.Ingested {
		if a.IdempotencyKey == "" {
			keyed = false
		}
	}
	for _, a := range w.Ingested {
		if keyed {
			fmt.Fprintf(h, "%s\x00%s\x00%s\x00", w.Tenant, a.Workspace, a.IdempotencyKey)
		} else {
			h.Write(a.ID[:])
		}
	}
	kind := "ingest-ids:"
	if keyed {
		kind = "ingest-keys:"
	}
	return kind + hex.EncodeToString(h.Sum(nil))
}

// replicate publishes entries as one message, or several in order when
// they do not fit in one (part i of a write with an id has the id
// "<id>/<i>"). waitStaged: see publish.
func (s *Shard) replicate(msgID string, entries []wal.Entry, waitStaged bool) error {
	limit := int(s.node.nc.MaxPayload()) - 1024 // room for the headers
	runs, err := splitEntries(entries, limit)
	if err != nil {
		return &engine.InvalidError{Field: "payload", Reason: err.Error()}
	}
	for i, run := range runs {
		id := msgID
		if id != "" && len(runs) > 1 {
			id += "/" + strconv.Itoa(i)
		}
		if err := s.publish(id, run, waitStaged); err != nil {
			return err
		}
	}
	return nil
}

// How often, and how far apart, publish sends again a message whose id the
// stream holds in a copy not yet stored on a quorum (about 5 s in all).
const (
	duplicatePasses = 50
	duplicateWait   = 100 * time.Millisecond
)

// publish publishes one message and waits for its apply. When the stream
// holds a message with its id already, it returns engine.ErrDuplicate once
// this node has applied that earlier copy (the engine then answers from
// it). The earlier copy may still be on its way to a quorum: a clustered
// stream then acknowledges the duplicate with sequence 0 (nats-server 2.9
// stages the id so). Then, with waitStaged (an ingest, whose client waits
// for what the first copy stored), publish sends the message again, at once
// and then every duplicateWait, until the stream names the copy's sequence
// or, after duplicatePasses sends, asks the client to retry; without, it
// returns engine.ErrDuplicate at once.
func (s *Shard) publish(msgID string, entries []wal.Entry, waitStaged bool) error {
	for pass := 1; ; pass++ {
		if pass > 2 {
			time.Sleep(duplicateWait)
		}
		staged, err := s.publishOnce(msgID, entries)
		if !staged || !waitStaged {
			return err
		}
		if pass == duplicatePasses {
			return fmt.Errorf("%w: an earlier copy of this write is not applied yet", engine.ErrUnavailable)
		}
	}
}

// publishOnce is one send of publish; staged reports a duplicate whose
// earlier copy is not stored on a quorum yet.
func (s *Shard) publishOnce(msgID string, entries []wal.Entry) (staged bool, err error) {
	token := s.node.cfg.NodeID + "." + s.node.boot + "." + strconv.FormatUint(s.seq.Add(1), 10)
	if msgID == "" {
		msgID = token
	}
	p := &pending{entries: entries, done: make(chan struct{})}
	s.mu.Lock()
	s.pending[token] = p
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		delete(s.pending, token)
		s.mu.Unlock()
	}
	m := nats.NewMsg(s.subject)
	m.Data = encodeMessage(entries)
	m.Header.Set(pubHeader, token)
	m.Header.Set(jetstream.MsgIDHeader, msgID)
	ctx, cancel := context.WithTimeout(s.node.ctx, s.node.cfg.PublishTimeout)
	defer cancel()
	ack, err := s.node.js.PublishMsg(ctx, m, jetstream.WithExpectStream(s.stream), jetstream.WithRetryAttempts(50),
		jetstream.WithRetryWait(100*time.Millisecond))
	if err != nil {
		forget()
		return false, fmt.Errorf("%w: %s: %v", engine.ErrUnavailable, s.stream, err)
	}
	s.sawLast(ack.Sequence)
	if ack.Duplicate {
		forget()
		if ack.Sequence == 0 {
			return true, engine.ErrDuplicate
		}
		if err := s.waitApplied(ctx, ack.Sequence); err != nil {
			return false, fmt.Errorf("%w: %s: the earlier copy (sequence %d) is not applied here yet", engine.ErrUnavailable, s.stream, ack.Sequence)
		}
		return false, engine.ErrDuplicate
	}
	select {
	case <-p.done:
		s.checkAppliedAt(ack.Sequence, p)
		return false, nil
	case <-ctx.Done():
		forget()
		return false, fmt.Errorf("%w: %s: stored at sequence %d but not applied by this node within %s", engine.ErrUnavailable, s.stream, ack.Sequence, s.node.cfg.PublishTimeout)
	}
}

// checkAppliedAt logs an error when this node applied its own write at
// another stream sequence than the one JetStream acknowledged: the replicas
// it reads from disagree with the leader on what that sequence holds, so
// reads at a data version can differ between nodes. nats-server 2.9.10 did
// so after a loss of quorum (docs/cluster.md, NATS version). The write is
// stored on a quorum all the same and stays acknowledged.
func (s *Shard) checkAppliedAt(acked uint64, p *pending) {
	if p.at != acked {
		s.node.log.Error("cluster: JetStream acknowledged a write at one sequence and this node applied it at another: the stream's replicas disagree (see docs/cluster.md, NATS version)",
			"stream", s.stream, "acknowledged", acked, "applied", p.at)
	}
}

// How long a pack waits for its receipt to be replicated before it is
// answered anyway, and how long the receipt keeps being published in the
// background after.
const (
	receiptWait  = 300 * time.Millisecond
	receiptRetry = 30 * time.Second
)

// replicateReceipt stores a receipt through the stream. A pack is a read:
// it must not fail, or wait for seconds, because the stream is electing a
// new leader after a server died. So it waits receiptWait for the
// receipt's quorum and then answers; the receipt is published again until
// the stream takes it (or the engine closes), and until then GET
// /v1/receipts/{id} answers 404.
func (s *Shard) replicateReceipt(w engine.Write) error {
	db := s.engine()
	id := w.Receipt.String()
	done := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(receiptRetry)
		for {
			if db.Closing() {
				done <- nil // closing: a receipt is not a write the client was told about
				return
			}
			err := s.replicate(messageID(w), w.Entries, false)
			if errors.Is(err, engine.ErrDuplicate) { // another node stored it (the same pack) first
				err = nil
			}
			if err == nil || !errors.Is(err, engine.ErrUnavailable) || time.Now().After(deadline) {
				if err != nil {
					s.node.log.Warn("cluster: receipt not stored", "receipt_id", id, "err", err)
				}
				done <- err
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(receiptWait):
		s.node.log.Warn("cluster: receipt not replicated yet; the pack is answered and the receipt follows", "receipt_id", id)
		return nil
	}
}
