package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// The corpus: operational notes of a small company, generated from a fixed
// seed so that every run stores the same texts (the ids and times differ).
var (
	services = []string{"billing", "search", "checkout", "ledger", "gateway", "scheduler", "inventory", "notifications"}
	people   = []string{"Priya", "Marcus", "Chen", "Olga", "Tomás", "Amara", "Kenji", "Fatima"}
	events   = []string{"the database failover", "the spring release", "the certificate rotation", "the load test",
		"the datacenter move", "the schema migration", "the security audit", "the holiday freeze"}
	outcomes = []string{"recovered within four minutes", "dropped about two percent of requests", "doubled its p99 latency",
		"ran out of connection slots", "was rolled back by the on-call engineer", "needed a manual cache flush",
		"kept serving from the read replica", "paged the whole team twice"}
	decisions = []string{"move the retry budget into the client library", "shard the queue by tenant",
		"pin the driver to the previous minor version", "add a canary stage before production",
		"alert on saturation instead of errors", "write a runbook for the rollback", "cap batch sizes at five hundred",
		"keep the old endpoint alive for one more quarter"}
	artifactTypes = []string{"note", "document", "chat_turn", "meeting_transcript", "email"}
)

// corpus generates artifact texts and queries about them.
type corpus struct{ r *rand.Rand }

func newCorpus(seed uint64) *corpus { return &corpus{rand.New(rand.NewPCG(seed, 0x10c1))} }

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// text is one artifact's content: two to four sentences on one service.
func (c *corpus) text() string {
	svc := pick(c.r, services)
	var b strings.Builder
	fmt.Fprintf(&b, "During %s the %s service %s.", pick(c.r, events), svc, pick(c.r, outcomes))
	for range 1 + c.r.IntN(3) {
		switch c.r.IntN(3) {
		case 0:
			fmt.Fprintf(&b, " %s proposed to %s for %s.", pick(c.r, people), pick(c.r, decisions), svc)
		case 1:
			fmt.Fprintf(&b, " The %s owner is %s; the backup is %s.", svc, pick(c.r, people), pick(c.r, people))
		default:
			fmt.Fprintf(&b, " After %s we decided to %s.", pick(c.r, events), pick(c.r, decisions))
		}
	}
	return b.String()
}

// query is a question the corpus can answer.
func (c *corpus) query() string {
	switch c.r.IntN(4) {
	case 0:
		return fmt.Sprintf("what happened to the %s service during %s", pick(c.r, services), pick(c.r, events))
	case 1:
		return fmt.Sprintf("who owns the %s service", pick(c.r, services))
	case 2:
		return fmt.Sprintf("what did we decide after %s", pick(c.r, events))
	default:
		return fmt.Sprintf("why did %s %s", pick(c.r, services), pick(c.r, []string{"fail", "slow down", "roll back", "page"}))
	}
}

// payload is a raw_payload for an artifact type, as compact JSON.
func (c *corpus) payload(typ string) json.RawMessage {
	text := c.text()
	switch typ {
	case "document":
		return mustJSON(map[string]string{"title": "Postmortem: " + pick(c.r, services), "content": text})
	case "chat_turn":
		return mustJSON(map[string]string{"role": pick(c.r, []string{"user", "assistant"}), "content": text})
	case "email":
		return mustJSON(map[string]string{"subject": "Re: " + pick(c.r, events), "content": text})
	default:
		return mustJSON(map[string]string{"content": text})
	}
}

// artifactIn is one artifact of an ingest request (v1 adds workspace and
// actor; a v2 batch gives them once).
type artifactIn struct {
	WorkspaceID    string            `json:"workspace_id,omitempty"`
	ActorID        string            `json:"actor_id,omitempty"`
	ArtifactType   string            `json:"artifact_type"`
	RawPayload     json.RawMessage   `json:"raw_payload"`
	Timestamp      string            `json:"timestamp,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	SessionID      string            `json:"session_id,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
}

// artifact draws an artifact for workspace ws; about half carry an explicit
// timestamp, the others take the publisher's clock.
func (c *corpus) artifact(ws, actor, key string) artifactIn {
	typ := pick(c.r, artifactTypes)
	a := artifactIn{WorkspaceID: ws, ActorID: actor, ArtifactType: typ, RawPayload: c.payload(typ), IdempotencyKey: key}
	if c.r.IntN(2) == 0 {
		ts := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(c.r.IntN(90*24*60)) * time.Minute)
		a.Timestamp = ts.Format(time.RFC3339)
	}
	if c.r.IntN(3) == 0 {
		a.SessionID = fmt.Sprintf("session-%d", c.r.IntN(4))
	}
	if c.r.IntN(2) == 0 {
		a.Metadata = map[string]string{"team": pick(c.r, []string{"platform", "payments", "growth"}), "source": typ}
	}
	return a
}

type batchIn struct {
	WorkspaceID string       `json:"workspace_id"`
	ActorID     string       `json:"actor_id"`
	Artifacts   []artifactIn `json:"artifacts"`
}

// packRequest is a context pack request, v1 or v2 (profile set).
type packRequest struct {
	v2   bool
	body map[string]any
	ws   string
}

func (p packRequest) path() string {
	if p.v2 {
		return "/v2/context-pack"
	}
	return "/v1/context-pack"
}

func (p packRequest) String() string {
	return fmt.Sprintf("POST %s %s", p.path(), mustJSON(p.body))
}

// packFor draws a pack request for workspace ws; variant k picks among v1,
// v2 profiles and filters so that a set of requests covers them all.
func (c *corpus) packFor(ws string, k int) packRequest {
	body := map[string]any{"query": c.query(), "workspace_id": ws, "max_tokens": 300 + 100*(k%5)}
	p := packRequest{ws: ws, body: body}
	switch k % 6 {
	case 1:
		p.v2 = true
		body["profile"] = "balanced"
	case 2:
		p.v2 = true
		body["profile"] = "high_recall"
	case 3:
		p.v2 = true
		body["profile"] = "low_latency"
		body["actor_id"] = "agent-1"
	case 4:
		body["mode"] = "coverage"
		body["metadata"] = map[string]string{"team": "platform"}
	case 5:
		body["session_id"] = "session-1"
	}
	return p
}

// workspaces returns n workspace names covering every one of the shards
// (n >= shards): first one per shard, then more in name order.
func workspaces(prefix string, n, shards int) []string {
	var out []string
	covered := map[int]bool{}
	for k := 0; len(covered) < shards; k++ {
		ws := fmt.Sprintf("%s-%d", prefix, k)
		if s := shardOf(ws, shards); !covered[s] {
			covered[s] = true
			out = append(out, ws)
		}
	}
	for k := 0; len(out) < n; k++ {
		ws := fmt.Sprintf("%s-%d", prefix, k)
		dup := false
		for _, o := range out {
			dup = dup || o == ws
		}
		if !dup {
			out = append(out, ws)
		}
	}
	return out
}

// retryable reports whether a client should send the request to another
// node: no answer, or the node said it cannot serve now.
func retryable(r reply) bool {
	return r.err != nil || r.status == http.StatusServiceUnavailable || r.status == http.StatusBadGateway ||
		r.status == http.StatusGatewayTimeout
}

// try sends a request to the nodes in order (cycling), each attempt bounded
// by per, until one answers with something other than a retryable failure or
// ctx ends. It returns the last reply and every failed attempt before it.
func (h *harness) try(ctx context.Context, order []int, per time.Duration, method, path string, body []byte, hdr map[string]string) (reply, []reply) {
	var failed []reply
	for k := 0; ; k++ {
		i := order[k%len(order)]
		actx, cancel := context.WithTimeout(ctx, per)
		r := h.do(actx, i, method, path, body, hdr)
		cancel()
		if !retryable(r) || ctx.Err() != nil {
			return r, failed
		}
		failed = append(failed, r)
		// A node that answered 503 asked to come back later; another may
		// serve now. Back off a little once every node was tried.
		if (k+1)%len(order) == 0 {
			select {
			case <-ctx.Done():
				return r, failed
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// rotation is the node order starting at first.
func rotation(first, n int) []int {
	o := make([]int, n)
	for k := range o {
		o[k] = (first + k) % n
	}
	return o
}

// firstDiff describes where two bodies differ, for failure messages.
func firstDiff(a, b []byte) string {
	n := min(len(a), len(b))
	k := 0
	for k < n && a[k] == b[k] {
		k++
	}
	lo := max(0, k-80)
	return fmt.Sprintf("bodies of %d and %d bytes differ at byte %d:\n  %q\n  %q", len(a), len(b), k,
		a[lo:min(len(a), k+80)], b[lo:min(len(b), k+80)])
}

// identical checks that every reply is 200 with the same body as the first,
// and returns a description of the first difference ("" when identical).
func identical(rs []reply) string {
	for _, r := range rs {
		if r.err != nil || r.status != http.StatusOK {
			return r.String()
		}
	}
	for _, r := range rs[1:] {
		if !bytes.Equal(r.body, rs[0].body) {
			return fmt.Sprintf("node %d and node %d: %s", rs[0].node, r.node, firstDiff(rs[0].body, r.body))
		}
	}
	return ""
}

// storedArtifact is the part of GET /v1/artifacts/{id} a test checks against
// what it sent.
type storedArtifact struct {
	ArtifactID  string          `json:"artifact_id"`
	WorkspaceID string          `json:"workspace_id"`
	RawPayload  json.RawMessage `json:"raw_payload"`
}

// checkStored checks an artifact read against the payload sent.
func checkStored(body []byte, id, ws string, payload []byte) error {
	var a storedArtifact
	if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("artifact %s: %v", id, err)
	}
	if a.ArtifactID != id || a.WorkspaceID != ws {
		return fmt.Errorf("artifact %s: read %s in %s, want it in %s", id, a.ArtifactID, a.WorkspaceID, ws)
	}
	if !bytes.Equal(a.RawPayload, payload) {
		return fmt.Errorf("artifact %s: raw_payload %s, sent %s", id, a.RawPayload, payload)
	}
	return nil
}
