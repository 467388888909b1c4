package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// written is an acknowledged artifact: what a client sent and what the
// cluster answered.
type written struct {
	id      string
	ws      string
	key     string // idempotency key, "" without
	payload []byte // raw_payload as sent
	version dataVersion
	node    int // the node that acknowledged it
}

// ackedWrite checks a write's answer: status want, and a data version on the
// workspace's shard. It returns the version, or an error naming what is wrong.
func (h *harness) ackedWrite(r reply, want int, ws string) (dataVersion, error) {
	if r.err != nil || r.status != want {
		return dataVersion{}, fmt.Errorf("want %d: %s", want, r)
	}
	v, err := h.writeVersion(r, ws)
	if err != nil {
		return dataVersion{}, fmt.Errorf("node %d: %v", r.node, err)
	}
	return v, nil
}

// ingestOne sends one v1 ingest to node i and returns the acknowledged
// artifact; want is 201 (new) or 200 (replay).
func (h *harness) ingestOne(i int, a artifactIn, want int, book *versionBook) (written, error) {
	r := h.doTimeout(20*time.Second, i, "POST", "/v1/ingest", mustJSON(a), nil)
	v, err := h.ackedWrite(r, want, a.WorkspaceID)
	if err != nil {
		return written{}, fmt.Errorf("ingest into %s: %w", a.WorkspaceID, err)
	}
	var out struct {
		ArtifactID string `json:"artifact_id"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || out.ArtifactID == "" {
		return written{}, fmt.Errorf("ingest: %s (%v)", r, err)
	}
	book.observe(v)
	return written{id: out.ArtifactID, ws: a.WorkspaceID, key: a.IdempotencyKey, payload: a.RawPayload, version: v, node: i}, nil
}

// decodeBatch reads the artifact ids of a v2 batch answer, in item order.
func decodeBatch(body []byte, n int) ([]string, error) {
	var out struct {
		Ingested []struct {
			ArtifactID string `json:"artifact_id"`
		} `json:"ingested"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	if len(out.Ingested) != n {
		return nil, fmt.Errorf("batch of %d answered %d items", n, len(out.Ingested))
	}
	ids := make([]string, n)
	for k, it := range out.Ingested {
		if it.ArtifactID == "" {
			return nil, fmt.Errorf("batch item %d without artifact_id", k)
		}
		ids[k] = it.ArtifactID
	}
	return ids, nil
}

// ingestBatch sends one v2 batch to node i.
func (h *harness) ingestBatch(i int, b batchIn, book *versionBook) ([]written, error) {
	r := h.doTimeout(30*time.Second, i, "POST", "/v2/ingest", mustJSON(b), nil)
	v, err := h.ackedWrite(r, http.StatusCreated, b.WorkspaceID)
	if err != nil {
		return nil, fmt.Errorf("batch into %s: %w", b.WorkspaceID, err)
	}
	ids, err := decodeBatch(r.body, len(b.Artifacts))
	if err != nil {
		return nil, fmt.Errorf("batch: %v: %s", err, r)
	}
	book.observe(v)
	out := make([]written, len(ids))
	for k, id := range ids {
		out[k] = written{id: id, ws: b.WorkspaceID, key: b.Artifacts[k].IdempotencyKey, payload: b.Artifacts[k].RawPayload, version: v, node: i}
	}
	return out, nil
}

// allNodes sends the same request to every running node in idx (in
// parallel) and returns the replies in idx order.
func (h *harness) allNodes(idx []int, timeout time.Duration, method, path string, body []byte, hdr map[string]string) []reply {
	rs := make([]reply, len(idx))
	var wg sync.WaitGroup
	for k, i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[k] = h.doTimeout(timeout, i, method, path, body, hdr)
		}()
	}
	wg.Wait()
	return rs
}

// waitEmbedded waits until every node in idx reports every artifact
// embedded: from then on the shard leaders publish no more vectors for them,
// so data versions stop moving until the next write.
func (h *harness) waitEmbedded(t testing.TB, idx []int, ws []written, book *versionBook, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, i := range idx {
		for _, w := range ws {
			for {
				r := h.doTimeout(10*time.Second, i, "GET", "/v1/artifacts/"+w.id+"/status", nil, book.min())
				var st struct {
					Embedding string `json:"embedding"`
				}
				if r.err == nil && r.status == http.StatusOK {
					json.Unmarshal(r.body, &st)
					if st.Embedding == "embedded" {
						break
					}
					if st.Embedding == "failed" || st.Embedding == "none" {
						t.Fatalf("artifact %s on node %d: embedding %q: %s", w.id, i, st.Embedding, r)
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("artifact %s not embedded on node %d after %v: %s", w.id, i, timeout, r)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
}

// listing pages through a workspace's artifacts on node i and returns every
// page's body concatenated, and the artifacts' idempotency keys by id.
func (h *harness) listing(i int, ws string, hdr map[string]string) ([]byte, map[string]*string, error) {
	var all []byte
	keys := map[string]*string{}
	cursor := ""
	for {
		q := url.Values{"limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := h.doTimeout(10*time.Second, i, "GET", "/v1/workspaces/"+ws+"/artifacts?"+q.Encode(), nil, hdr)
		if r.err != nil || r.status != http.StatusOK {
			return nil, nil, fmt.Errorf("listing %s: %s", ws, r)
		}
		all = append(all, r.body...)
		var page struct {
			Artifacts []struct {
				ArtifactID     string  `json:"artifact_id"`
				IdempotencyKey *string `json:"idempotency_key"`
			} `json:"artifacts"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			return nil, nil, fmt.Errorf("listing %s: %v", ws, err)
		}
		for _, a := range page.Artifacts {
			keys[a.ArtifactID] = a.IdempotencyKey
		}
		if page.NextCursor == nil {
			return all, keys, nil
		}
		cursor = *page.NextCursor
	}
}

// packCites reports whether a pack body (v1 or v2) holds any evidence.
func packCites(body []byte) bool {
	var p struct {
		Citations []json.RawMessage `json:"citations"`
		Snippets  []json.RawMessage `json:"snippets"`
	}
	json.Unmarshal(body, &p)
	return len(p.Citations)+len(p.Snippets) > 0
}

// receiptID reads a pack body's receipt_id.
func receiptID(body []byte) string {
	var p struct {
		ReceiptID string `json:"receipt_id"`
	}
	json.Unmarshal(body, &p)
	return p.ReceiptID
}

// getEventually reads path from node i, asking again while it answers 404
// or cannot serve, up to timeout: for what another node stored and this
// one applies from a stream without a data version to wait for (receipts).
func (h *harness) getEventually(i int, path string, hdr map[string]string, timeout time.Duration) reply {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		r := h.do(ctx, i, "GET", path, nil, hdr)
		if r.err == nil && r.status != http.StatusNotFound && !retryable(r) {
			return r
		}
		select {
		case <-ctx.Done():
			return r
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// shardVersion is what reply r says its node had applied of shard's stream
// (its part of X-Loci-Data-Version), or the whole header when it has no such
// part (then it never matches a well-formed one).
func shardVersion(r reply, shard int) string {
	v := r.header.Get(hdrDataVersion)
	if parts := strings.Split(v, "."); 1+shard < len(parts) {
		return parts[1+shard]
	}
	return v
}

// atOneVersion sends the same read to every node in idx until all answer
// from the same position of shard's stream, at most 15 s, and returns those
// replies. Reads with X-Loci-Min-Data-Version see at least every
// acknowledged write, but a write that was not acknowledged (its client gave
// up) may still land later, on one node before another: only answers at the
// same position must be identical. The error lists the positions seen last.
func (h *harness) atOneVersion(idx []int, shard int, method, path string, body []byte, hdr map[string]string) ([]reply, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		rs := h.allNodes(idx, 10*time.Second, method, path, body, hdr)
		same, answered := true, true
		for _, r := range rs {
			answered = answered && r.err == nil && !retryable(r)
			same = same && shardVersion(r, shard) == shardVersion(rs[0], shard)
		}
		if answered && same {
			return rs, nil
		}
		if time.Now().After(deadline) {
			var seen []string
			for _, r := range rs {
				seen = append(seen, fmt.Sprintf("node %d at %q (%d)", r.node, r.header.Get(hdrDataVersion), r.status))
			}
			return rs, fmt.Errorf("%s %s: the nodes did not answer from one position of shard %d within 15 s: %s", method, path, shard, strings.Join(seen, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
