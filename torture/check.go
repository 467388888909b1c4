package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// Checked counts what the checks after the crashes read back.
type Checked struct {
	Artifacts        int `json:"artifacts"`
	IdempotencyKeys  int `json:"idempotency_keys"`
	Keys             int `json:"keys"`
	ErasedWorkspaces int `json:"erased_workspaces"`
	Jobs             int `json:"jobs"`
	Packs            int `json:"packs"`
	Verifies         int `json:"verifies"`
	// ErasedArtifacts counts reads of artifacts whose erase was sent;
	// Retention the checks of the retention workspace and RetainedArtifacts
	// the reads of its artifacts, present or erased by retention.
	ErasedArtifacts   int `json:"erased_artifacts"`
	ErasedPacks       int `json:"erased_artifact_packs"` // packs that must not cite an erased artifact
	Retention         int `json:"retention_checks"`
	RetainedArtifacts int `json:"retained_artifacts"`
	RetainedGone      int `json:"retained_gone"`       // of which erased by retention
	Imports           int `json:"imported_workspaces"` // checks of imported workspaces
}

// checker runs the checks after one restart.
type checker struct {
	c     *client
	admin string
	led   *ledger
	fail  func(string)
	n     *Checked
	mu    sync.Mutex // guards n
}

func (k *checker) count(f func(*Checked)) {
	k.mu.Lock()
	f(k.n)
	k.mu.Unlock()
}

// get reads an artifact; status is 0 when the request failed.
func (k *checker) getArtifact(ctx context.Context, id string) (int, []byte, error) {
	r, err := k.c.do(ctx, "GET", "/v1/artifacts/"+id, k.admin, nil)
	if err != nil {
		return 0, nil, err
	}
	if r.status != http.StatusOK {
		return r.status, r.body, nil
	}
	var out struct {
		RawPayload json.RawMessage `json:"raw_payload"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		return r.status, nil, fmt.Errorf("unreadable artifact %s: %v", id, err)
	}
	return r.status, out.RawPayload, nil
}

// artifacts checks that every artifact in as reads back byte-identical.
func (k *checker) artifacts(ctx context.Context, as []*ackArtifact) {
	parallel(as, 4, func(a *ackArtifact) {
		status, raw, err := k.getArtifact(ctx, a.id)
		switch {
		case err != nil:
			k.fail(fmt.Sprintf("read acknowledged artifact %s (%s): %v", a.id, a.ws, err))
		case status != http.StatusOK:
			k.fail(fmt.Sprintf("LOST: acknowledged artifact %s in %s answers %d: %s", a.id, a.ws, status, truncate(raw)))
		case !bytes.Equal(raw, a.payload):
			k.fail(fmt.Sprintf("CHANGED: acknowledged artifact %s in %s: raw_payload %q, sent %q", a.id, a.ws, truncate(raw), truncate(a.payload)))
		}
		k.count(func(c *Checked) { c.Artifacts++ })
	})
}

// idempotency checks that every key in as still replays its one artifact.
func (k *checker) idempotency(ctx context.Context, as []*ackArtifact) {
	parallel(as, 4, func(a *ackArtifact) {
		k.led.mu.Lock()
		skip := a.idem == "" || a.erased || a.erasing // an erased artifact's key is free again
		k.led.mu.Unlock()
		if skip {
			return
		}
		r, err := k.c.do(ctx, "POST", "/v1/ingest", k.admin, a.retry)
		if err != nil {
			k.fail(fmt.Sprintf("replay idempotency key %q: %v", a.idem, err))
			return
		}
		if msg := replayMismatch(a, r); msg != "" {
			k.fail("idempotency after restart: " + msg)
		}
		k.count(func(c *Checked) { c.IdempotencyKeys++ })
	})
}

// erasures checks erased workspaces: an acknowledged erase leaves every
// artifact acknowledged before it unreadable; an erase without an answer may
// have happened or not, but all or nothing. It then settles unanswered
// erases by erasing again.
func (k *checker) erasures(ctx context.Context, es []*erasable) {
	for _, e := range es {
		k.led.mu.Lock()
		erased, erasing, arts := e.erased, e.erasing, append([]*ackArtifact(nil), e.artifacts...)
		k.led.mu.Unlock()
		if !erased && !erasing {
			k.artifacts(ctx, arts)
			continue
		}
		var readable, gone []string
		for _, a := range arts {
			status, raw, err := k.getArtifact(ctx, a.id)
			switch {
			case err != nil:
				k.fail(fmt.Sprintf("read artifact %s of erased workspace %s: %v", a.id, e.ws, err))
			case status == http.StatusNotFound:
				gone = append(gone, a.id)
			case status == http.StatusOK && bytes.Equal(raw, a.payload):
				readable = append(readable, a.id)
			default:
				k.fail(fmt.Sprintf("artifact %s of erased workspace %s answers %d: %s", a.id, e.ws, status, truncate(raw)))
			}
			k.count(func(c *Checked) { c.Artifacts++ })
		}
		switch {
		case erased && len(readable) > 0:
			k.fail(fmt.Sprintf("ERASURE UNDONE: workspace %s erased (acknowledged) but artifacts %v are readable", e.ws, readable))
		case erasing && len(readable) > 0 && len(gone) > 0:
			k.fail(fmt.Sprintf("HALF ERASED: workspace %s (erase unanswered at the crash): %v readable, %v gone", e.ws, readable, gone))
		}
		k.count(func(c *Checked) { c.ErasedWorkspaces++ })
		if erasing {
			r, err := k.c.do(ctx, "DELETE", "/v1/workspaces/"+e.ws, k.admin, nil)
			if err != nil || r.status != http.StatusOK {
				k.fail(fmt.Sprintf("erase %s again after restart: %v %d %s", e.ws, err, r.status, truncate(r.body)))
				continue
			}
			k.led.mu.Lock()
			e.erasing, e.erased = false, true
			k.led.mu.Unlock()
		}
	}
}

// keys checks that live keys authenticate and revoked ones get 401. A key
// whose revocation was unanswered may be either, and is settled by what the
// server says.
func (k *checker) keys(ctx context.Context) {
	k.led.mu.Lock()
	keys := append([]*tenantKey(nil), k.led.keys...)
	k.led.mu.Unlock()
	for _, t := range keys {
		r, err := k.c.do(ctx, "GET", "/v1/keys", t.secret, nil)
		if err != nil {
			k.fail(fmt.Sprintf("list keys with key %s: %v", t.id, err))
			continue
		}
		k.led.mu.Lock()
		revoked, revoking := t.revoked, t.revoking
		k.led.mu.Unlock()
		switch {
		case r.status == http.StatusTooManyRequests:
			continue // the tenant's rate limit: nothing learned
		case revoking:
			k.led.mu.Lock()
			t.revoking, t.revoked = false, r.status == http.StatusUnauthorized
			k.led.mu.Unlock()
			if r.status != http.StatusOK && r.status != http.StatusUnauthorized {
				k.fail(fmt.Sprintf("key %s (revocation unanswered) answers %d: %s", t.id, r.status, truncate(r.body)))
			}
		case revoked && r.status != http.StatusUnauthorized:
			k.fail(fmt.Sprintf("REVOCATION LOST: revoked key %s answers %d", t.id, r.status))
		case !revoked && r.status != http.StatusOK:
			k.fail(fmt.Sprintf("KEY LOST: created key %s answers %d: %s", t.id, r.status, truncate(r.body)))
		}
		k.count(func(c *Checked) { c.Keys++ })
	}
}

// jobs checks every acknowledged job not yet seen done: it must be known;
// once done, its artifact must read back byte-identical, and it joins the
// ledger's artifacts.
func (k *checker) jobs(ctx context.Context) {
	k.led.mu.Lock()
	var open []*ackJob
	for _, j := range k.led.jobs {
		if !j.done {
			open = append(open, j)
		}
	}
	k.led.mu.Unlock()
	parallel(open, 4, func(j *ackJob) {
		r, err := k.c.do(ctx, "GET", "/v2/jobs/"+j.id, k.admin, nil)
		if err != nil {
			k.fail(fmt.Sprintf("read job %s: %v", j.id, err))
			return
		}
		var out struct {
			Status       string  `json:"status"`
			ArtifactID   string  `json:"artifact_id"`
			ErrorMessage *string `json:"error_message"`
		}
		json.Unmarshal(r.body, &out)
		k.count(func(c *Checked) { c.Jobs++ })
		switch {
		case r.status != http.StatusOK:
			k.fail(fmt.Sprintf("LOST: acknowledged job %s in %s answers %d: %s", j.id, j.ws, r.status, truncate(r.body)))
		case out.Status == "failed":
			k.fail(fmt.Sprintf("job %s in %s failed: %s", j.id, j.ws, truncate(r.body)))
		case out.Status == "done":
			a := &ackArtifact{id: out.ArtifactID, ws: j.ws, payload: j.payload}
			k.artifacts(ctx, []*ackArtifact{a})
			k.led.mu.Lock()
			j.done = true
			k.led.mu.Unlock()
			k.led.addArtifact(a)
		}
	})
}

// frozenPacks checks that packs on workspaces unchanged since setup are
// byte-identical to their answers before any crash.
func (k *checker) frozenPacks(ctx context.Context) {
	for _, p := range k.led.frozen {
		r, err := k.c.do(ctx, "POST", p.path, k.admin, p.body)
		switch {
		case err != nil:
			k.fail(fmt.Sprintf("pack %s %s: %v", p.path, p.body, err))
		case r.status != http.StatusOK || !bytes.Equal(r.body, p.resp):
			k.fail(fmt.Sprintf("PACK CHANGED: %s %s answered %d:\n  %s\nbefore the crashes:\n  %s", p.path, p.body, r.status, truncate(r.body), truncate(p.resp)))
		}
		k.count(func(c *Checked) { c.Packs++ })
	}
}

// parallel calls f on every item with up to n goroutines.
func parallel[T any](items []T, n int, f func(T)) {
	ch := make(chan T)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				f(it)
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
}
