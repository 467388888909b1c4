package torture

// Single-artifact erasure (DELETE /v1/artifacts/{id}) and per-workspace
// retention (PUT /v1/workspaces/{id}/settings) under load, and their checks.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"
	"unicode"
)

// retentionWorkspace is the one workspace with a retention setting. Only
// load client 0 writes to it, one request at a time, so its operations are
// totally ordered and at most one is unanswered at a kill.
const retentionWorkspace = "retain-a"

// dayMicros is one day in Unix µs.
const dayMicros = int64(24 * time.Hour / time.Microsecond)

// retentionBase is the artifact time of the retention workspace's first
// artifact in the model's tests; a run starts its timeline three days
// before its start (retainedWS.base). Each later one is 6 hours on, some sent up
// to 5 days back, and none after the clock: once the timeline reaches it,
// the ingests are stamped a minute before the clock, and some a little
// ahead of it (up to 23 hours, accepted: their retention time is their
// time of ingest). Some are stamped more than a day ahead and must be
// refused, changing nothing.
var retentionBase = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

// retentionTime is what an artifact adds to the retention reference, as the
// server takes it: its timestamp, or its time of ingest if earlier (unknown,
// 0, in the model's tests: the timestamp).
func retentionTime(a *ackArtifact) int64 {
	if a.createdMicro == 0 {
		return a.tsMicro
	}
	return min(a.tsMicro, a.createdMicro)
}

// retOp is one write to the retention workspace: a settings change (set;
// days 0 clears) or an ingest (art).
type retOp struct {
	set  bool
	days int
	art  *ackArtifact
}

// retainedWS is what the retention workspace was sent.
type retainedWS struct {
	ops     []retOp // acknowledged, in order
	pending *retOp  // sent, unanswered (resolved by the next check)
	sent    int     // ingests sent, for their timestamps
	base    int64   // the first ingest's timestamp (set before the load)
}

// retentionCutoff is the cutoff of days before newest: UTC midnight of the
// day days before newest's.
func retentionCutoff(newest int64, days int) int64 {
	day := newest / dayMicros
	if newest%dayMicros < 0 {
		day--
	}
	return (day - int64(days)) * dayMicros
}

// retentionModel is the expected state after ops, in order: the retention
// in days (0: none), the cutoff (math.MinInt64: none) and the artifacts
// present and erased. The cutoff only moves forward while retention is set;
// clearing it drops the cutoff but brings nothing back; an artifact older
// than the cutoff is erased as it arrives.
func retentionModel(ops []retOp) (days int, cutoff int64, present, gone []*ackArtifact) {
	newest, cutoff := int64(math.MinInt64), int64(math.MinInt64)
	erased := map[*ackArtifact]bool{}
	var arts []*ackArtifact
	advance := func() {
		if days == 0 || newest == math.MinInt64 {
			return
		}
		if c := retentionCutoff(newest, days); c > cutoff {
			cutoff = c
		}
		for _, a := range arts {
			if a.tsMicro < cutoff {
				erased[a] = true
			}
		}
	}
	for _, op := range ops {
		if op.set {
			if op.days == 0 {
				days, cutoff = 0, math.MinInt64
				continue
			}
			days = op.days
			advance()
			continue
		}
		arts = append(arts, op.art)
		newest = max(newest, retentionTime(op.art))
		advance()
	}
	for _, a := range arts {
		if erased[a] {
			gone = append(gone, a)
		} else {
			present = append(present, a)
		}
	}
	return days, cutoff, present, gone
}

// retentionIngest is the v1 ingest of the retention workspace's n-th
// artifact, and its timestamp.
func retentionIngest(w *worker, n int) (*ackArtifact, []byte) {
	ts := w.led.retained.base + int64(n)*dayMicros/4 + int64(n)
	if w.rng.Intn(2) == 0 {
		ts -= w.rng.Int63n(5 * dayMicros)
	}
	return retentionIngestAt(w, min(ts, time.Now().Add(-time.Minute).UnixMicro()))
}

// retentionIngestAt is a v1 ingest into the retention workspace stamped ts.
func retentionIngestAt(w *worker, ts int64) (*ackArtifact, []byte) {
	typ, raw := payload(w.rng, w.nonce())
	body := v1Body(retentionWorkspace, typ, raw, "")
	stamp := time.UnixMicro(ts).UTC().Format(time.RFC3339Nano)
	body = append(body[:len(body)-1], fmt.Sprintf(`,"timestamp":%q}`, stamp)...)
	return &ackArtifact{ws: retentionWorkspace, payload: raw, tsMicro: ts}, body
}

// retention writes to the retention workspace: mostly an ingest with an
// explicit timestamp, sometimes a new retention (1 to 4 days, or cleared).
func (w *worker) retention(ctx context.Context) {
	l := w.led
	l.mu.Lock()
	if l.retained.pending != nil {
		l.mu.Unlock()
		return // the server is gone: an unanswered write awaits the check
	}
	n := l.retained.sent
	l.mu.Unlock()
	now := time.Now()
	caughtUp := l.retained.base+int64(n)*dayMicros/4 >= now.Add(-24*time.Hour).UnixMicro()
	switch r := w.rng.Intn(10); {
	case r == 0:
		w.futureIngest(ctx, now)
		return
	case r == 1 && caughtUp:
		// A little ahead of the clock: accepted, and it must not erase
		// what the clock keeps.
		a, body := retentionIngestAt(w, now.Add(time.Duration(w.rng.Int63n(int64(23*time.Hour)))).UnixMicro())
		l.mu.Lock()
		l.retained.sent++
		l.mu.Unlock()
		w.retentionCall(ctx, &retOp{art: a}, "POST", "/v1/ingest", body, http.StatusCreated)
		return
	}
	if w.rng.Intn(5) == 0 {
		op := &retOp{set: true, days: 1 + w.rng.Intn(4)}
		body := fmt.Sprintf(`{"retention_days":%d}`, op.days)
		if w.rng.Intn(8) == 0 {
			op.days, body = 0, `{"retention_days":null}`
		}
		w.retentionCall(ctx, op, "PUT", "/v1/workspaces/"+retentionWorkspace+"/settings", []byte(body), http.StatusOK)
		return
	}
	a, body := retentionIngest(w, n)
	l.mu.Lock()
	l.retained.sent++
	l.mu.Unlock()
	w.retentionCall(ctx, &retOp{art: a}, "POST", "/v1/ingest", body, http.StatusCreated)
}

// retentionCall sends op; acknowledged, it joins the ledger; unanswered,
// it is pending until the next check resolves it.
func (w *worker) retentionCall(ctx context.Context, op *retOp, method, path string, body []byte, want int) {
	l := w.led
	l.mu.Lock()
	l.retained.pending = op
	l.mu.Unlock()
	r, ok := w.call(ctx, "retention workspace", method, path, w.admin, body)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.retained.pending = nil
	if op.art != nil && r.status == http.StatusBadRequest && bytes.Contains(r.body, []byte("retention cutoff")) {
		// An artifact older than the cutoff is refused, changing nothing:
		// right only if the acknowledged writes put the cutoff past it.
		if _, cutoff, _, _ := retentionModel(l.retained.ops); op.art.tsMicro < cutoff {
			l.counts.RetentionRefused++
			return
		}
	}
	if r.status != want {
		w.fail(fmt.Sprintf("retention workspace: %s %s answered %d: %s", method, path, r.status, truncate(r.body)))
		return
	}
	if op.art != nil {
		var out struct {
			ArtifactID string `json:"artifact_id"`
			Created    string `json:"created"`
		}
		created, terr := time.Time{}, error(nil)
		err := json.Unmarshal(r.body, &out)
		if err == nil {
			created, terr = time.Parse(time.RFC3339Nano, out.Created)
		}
		if err != nil || terr != nil || out.ArtifactID == "" {
			w.fail(fmt.Sprintf("retention workspace: unreadable ingest answer %s", truncate(r.body)))
			return
		}
		op.art.id, op.art.createdMicro = out.ArtifactID, created.UnixMicro()
		l.counts.RetainedArtifacts++
	} else {
		l.counts.RetentionChanges++
	}
	l.retained.ops = append(l.retained.ops, *op)
}

// eraseArtifact erases an acknowledged artifact nobody else is using: it
// reads it first (its timestamp lets the checks list around it), then
// deletes it; a 200 is the acknowledgement.
func (w *worker) eraseArtifact(ctx context.Context) {
	l := w.led
	var a *ackArtifact
	l.mu.Lock()
	for tries := 0; tries < 8 && len(l.artifacts) > 0 && a == nil; tries++ {
		if c := l.artifacts[w.rng.Intn(len(l.artifacts))]; !c.erased && !c.erasing && c.inUse == 0 {
			a = c
		}
	}
	if a == nil {
		l.mu.Unlock()
		w.ingestV1(ctx)
		return
	}
	a.erasing = true
	l.mu.Unlock()
	unmark := func() {
		l.mu.Lock()
		a.erasing = false
		l.mu.Unlock()
	}
	r, ok := w.call(ctx, "read before erase", "GET", "/v1/artifacts/"+a.id, w.admin, nil)
	if !ok {
		unmark()
		return
	}
	var got struct {
		RawPayload json.RawMessage `json:"raw_payload"`
		Timestamp  string          `json:"timestamp"`
	}
	if err := json.Unmarshal(r.body, &got); r.status != http.StatusOK || err != nil || !bytes.Equal(got.RawPayload, a.payload) || got.Timestamp == "" {
		w.fail(fmt.Sprintf("LOST: acknowledged artifact %s in %s read during load answers %d: %s", a.id, a.ws, r.status, truncate(r.body)))
		unmark()
		return
	}
	l.mu.Lock()
	a.ts = got.Timestamp
	l.erasedArt = append(l.erasedArt, a)
	l.mu.Unlock()
	r, ok = w.call(ctx, "erase artifact", "DELETE", "/v1/artifacts/"+a.id, w.admin, nil)
	if !ok {
		return // unanswered: erasing stays set, the check accepts either outcome
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.status != http.StatusOK {
		a.erasing = false
		w.fail(fmt.Sprintf("erase acknowledged artifact %s in %s answered %d: %s", a.id, a.ws, r.status, truncate(r.body)))
		return
	}
	a.erasing, a.erased = false, true
	l.counts.ArtifactErasures++
}

// listed reports whether a listing of a's workspace around its timestamp
// shows it.
func (k *checker) listed(ctx context.Context, a *ackArtifact) (bool, error) {
	q := url.Values{"since": {a.ts}, "until": {a.ts}, "limit": {"500"}}
	r, err := k.c.do(ctx, "GET", "/v1/workspaces/"+url.PathEscape(a.ws)+"/artifacts?"+q.Encode(), k.admin, nil)
	if err != nil {
		return false, err
	}
	if r.status != http.StatusOK {
		return false, fmt.Errorf("listing answered %d: %s", r.status, truncate(r.body))
	}
	return bytes.Contains(r.body, []byte(`"`+a.id+`"`)), nil
}

// packQuery is a query made of the words of a payload.
func packQuery(raw []byte) string {
	f := strings.FieldsFunc(string(raw), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(f) > 12 {
		f = f[:12]
	}
	return strings.Join(f, " ")
}

// erasedArtifacts checks artifacts whose erase was sent. Acknowledged: GET
// is 404, no listing shows it and a pack asked with its own words does not
// cite it (when pack is set). Unanswered: present or gone, but GET and the
// listing agree; the answer settles it.
func (k *checker) erasedArtifacts(ctx context.Context, as []*ackArtifact, pack bool) {
	parallel(as, 4, func(a *ackArtifact) {
		k.led.mu.Lock()
		erased, erasing := a.erased, a.erasing
		k.led.mu.Unlock()
		status, raw, err := k.getArtifact(ctx, a.id)
		if err != nil {
			k.fail(fmt.Sprintf("read erased artifact %s (%s): %v", a.id, a.ws, err))
			return
		}
		inList, err := k.listed(ctx, a)
		if err != nil {
			k.fail(fmt.Sprintf("list around erased artifact %s (%s): %v", a.id, a.ws, err))
			return
		}
		k.count(func(c *Checked) { c.ErasedArtifacts++ })
		switch {
		case status != http.StatusOK && status != http.StatusNotFound:
			k.fail(fmt.Sprintf("erased artifact %s in %s answers %d: %s", a.id, a.ws, status, truncate(raw)))
			return
		case status == http.StatusOK && !bytes.Equal(raw, a.payload):
			k.fail(fmt.Sprintf("CHANGED: artifact %s in %s: raw_payload %q, sent %q", a.id, a.ws, truncate(raw), truncate(a.payload)))
			return
		case erased && status == http.StatusOK:
			k.fail(fmt.Sprintf("ARTIFACT ERASURE UNDONE: artifact %s in %s erased (acknowledged) but readable", a.id, a.ws))
		case erased && inList:
			k.fail(fmt.Sprintf("ARTIFACT ERASURE UNDONE: artifact %s in %s erased (acknowledged) but listed", a.id, a.ws))
		case erasing && (status == http.StatusOK) != inList:
			k.fail(fmt.Sprintf("ERASURE INCONSISTENT: artifact %s in %s (erase unanswered at the crash): GET %d, listed %v", a.id, a.ws, status, inList))
		}
		if pack && status == http.StatusNotFound {
			body := fmt.Sprintf(`{"workspace_id":%q,"query":%q,"max_tokens":4000}`, a.ws, packQuery(a.payload))
			r, err := k.c.do(ctx, "POST", "/v1/context-pack", k.admin, []byte(body))
			switch {
			case err != nil || r.status != http.StatusOK:
				k.fail(fmt.Sprintf("pack around erased artifact %s: %v %d %s", a.id, err, r.status, truncate(r.body)))
			case bytes.Contains(r.body, []byte(a.id)):
				k.fail(fmt.Sprintf("ARTIFACT ERASURE UNDONE: artifact %s in %s erased but cited in a pack: %s", a.id, a.ws, truncate(r.body)))
			}
			k.count(func(c *Checked) { c.ErasedPacks++ })
		}
		if erasing {
			k.led.mu.Lock()
			a.erasing, a.erased = false, status == http.StatusNotFound
			k.led.mu.Unlock()
		}
	})
}

// listAll lists every artifact of ws: id to timestamp.
func (k *checker) listAll(ctx context.Context, ws string) (map[string]string, error) {
	out := map[string]string{}
	cursor := ""
	for {
		q := url.Values{"limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r, err := k.c.do(ctx, "GET", "/v1/workspaces/"+url.PathEscape(ws)+"/artifacts?"+q.Encode(), k.admin, nil)
		if err != nil {
			return nil, err
		}
		var page struct {
			Artifacts []struct {
				ID        string `json:"artifact_id"`
				Timestamp string `json:"timestamp"`
			} `json:"artifacts"`
			Next *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(r.body, &page); r.status != http.StatusOK || err != nil {
			return nil, fmt.Errorf("listing %s answered %d: %s", ws, r.status, truncate(r.body))
		}
		for _, a := range page.Artifacts {
			out[a.ID] = a.Timestamp
		}
		if page.Next == nil || len(page.Artifacts) == 0 {
			return out, nil
		}
		cursor = *page.Next
	}
}

// settingsDays reads a workspace's retention (0: none).
func (k *checker) settingsDays(ctx context.Context, ws string) (int, error) {
	r, err := k.c.do(ctx, "GET", "/v1/workspaces/"+url.PathEscape(ws)+"/settings", k.admin, nil)
	if err != nil {
		return 0, err
	}
	var out struct {
		RetentionDays *int `json:"retention_days"`
	}
	if err := json.Unmarshal(r.body, &out); r.status != http.StatusOK || err != nil {
		return 0, fmt.Errorf("settings of %s answered %d: %s", ws, r.status, truncate(r.body))
	}
	if out.RetentionDays == nil {
		return 0, nil
	}
	return *out.RetentionDays, nil
}

// retention checks the retention workspace against the model of its
// acknowledged writes: the setting as acknowledged, every artifact older
// than the expected cutoff gone (GET 404, not listed), every other
// acknowledged one present and byte-identical, nothing else listed. An
// unanswered write is first resolved from what the server shows: a setting
// by GET settings, an ingest by an unknown id in the listing (if it was
// erased as it arrived, it is older than the cutoff and changed nothing).
func (k *checker) retention(ctx context.Context) {
	ws := retentionWorkspace
	listing, err := k.listAll(ctx, ws)
	if err != nil {
		k.fail(fmt.Sprintf("retention workspace: %v", err))
		return
	}
	days, err := k.settingsDays(ctx, ws)
	if err != nil {
		k.fail(fmt.Sprintf("retention workspace: %v", err))
		return
	}
	l := k.led
	l.mu.Lock()
	known := map[string]bool{}
	for _, op := range l.retained.ops {
		if op.art != nil {
			known[op.art.id] = true
		}
	}
	var unknown []string
	for id := range listing {
		if !known[id] {
			unknown = append(unknown, id)
		}
	}
	sort.Strings(unknown)
	pendingNote := "none"
	if p := l.retained.pending; p != nil {
		pendingNote = fmt.Sprintf("%+v days on server %d unknown %v", *p, days, unknown)
		if p.art != nil {
			pendingNote += " ts " + stamp(p.art.tsMicro)
		}
		l.retained.pending = nil
		switch {
		case p.set && days == p.days:
			l.retained.ops = append(l.retained.ops, *p)
		case p.art != nil && len(unknown) == 1:
			ts, err := time.Parse(time.RFC3339Nano, listing[unknown[0]])
			created, cerr := k.created(ctx, unknown[0])
			if err == nil && cerr == nil && ts.UnixMicro() == p.art.tsMicro {
				p.art.id, p.art.createdMicro = unknown[0], created
				l.retained.ops = append(l.retained.ops, *p)
				unknown = nil
			}
		}
	}
	ops := append([]retOp(nil), l.retained.ops...)
	l.mu.Unlock()

	wantDays, cutoff, present, gone := retentionModel(ops)
	k.count(func(c *Checked) { c.Retention++ })
	cut := "none"
	if cutoff != math.MinInt64 {
		cut = time.UnixMicro(cutoff).UTC().Format(time.RFC3339)
	}
	if os.Getenv("LOCI_TORTURE_DEBUG") != "" {
		var b strings.Builder
		for _, op := range ops {
			if op.set {
				fmt.Fprintf(&b, " set%d", op.days)
			} else {
				fmt.Fprintf(&b, " %s", stamp(op.art.tsMicro)[5:16])
			}
		}
		fmt.Fprintf(os.Stderr, "retention ops (resolved pending %v):%s\n", pendingNote, b.String())
	}
	if days != wantDays {
		k.fail(fmt.Sprintf("RETENTION SETTING: %s has retention_days %d, acknowledged %d", ws, days, wantDays))
	}
	for _, id := range unknown {
		k.fail(fmt.Sprintf("UNKNOWN ARTIFACT: %s lists %s (timestamp %s), never acknowledged", ws, id, listing[id]))
	}
	for _, a := range gone {
		if _, ok := listing[a.id]; ok {
			k.fail(fmt.Sprintf("RETENTION UNDONE: %s lists artifact %s of %s, before the cutoff %s", ws, a.id, stamp(a.tsMicro), cut))
		}
	}
	for _, a := range present {
		if _, ok := listing[a.id]; !ok {
			k.fail(fmt.Sprintf("LOST: retained artifact %s of %s in %s is not listed (cutoff %s)", a.id, stamp(a.tsMicro), ws, cut))
		}
	}
	isGone := map[*ackArtifact]bool{}
	for _, a := range gone {
		isGone[a] = true
	}
	parallel(append(append([]*ackArtifact(nil), present...), gone...), 4, func(a *ackArtifact) {
		status, raw, err := k.getArtifact(ctx, a.id)
		wantGone := isGone[a]
		switch {
		case err != nil:
			k.fail(fmt.Sprintf("read retained artifact %s: %v", a.id, err))
		case wantGone && status != http.StatusNotFound:
			k.fail(fmt.Sprintf("RETENTION UNDONE: artifact %s of %s in %s, before the cutoff %s, answers %d", a.id, stamp(a.tsMicro), ws, cut, status))
		case !wantGone && status != http.StatusOK:
			k.fail(fmt.Sprintf("LOST: retained artifact %s of %s in %s (cutoff %s) answers %d: %s", a.id, stamp(a.tsMicro), ws, cut, status, truncate(raw)))
		case !wantGone && !bytes.Equal(raw, a.payload):
			k.fail(fmt.Sprintf("CHANGED: retained artifact %s in %s: raw_payload %q, sent %q", a.id, ws, truncate(raw), truncate(a.payload)))
		}
		k.count(func(c *Checked) {
			c.RetainedArtifacts++
			if wantGone {
				c.RetainedGone++
			}
		})
	})
}

// futureIngest sends an ingest into the retention workspace stamped more
// than a day after the clock (now): it must be refused with a 400 naming
// the timestamp, and change nothing (the checks find no unknown artifact
// and nothing erased that the model keeps).
func (w *worker) futureIngest(ctx context.Context, now time.Time) {
	ts := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
	if w.rng.Intn(2) == 0 {
		ts = now.Add(25*time.Hour + time.Duration(w.rng.Int63n(int64(1000*24*time.Hour))))
	}
	_, body := retentionIngestAt(w, ts.UnixMicro())
	r, ok := w.call(ctx, "retention workspace", "POST", "/v1/ingest", w.admin, body)
	if !ok {
		return
	}
	if r.status != http.StatusBadRequest || !bytes.Contains(r.body, []byte("timestamp")) {
		w.fail(fmt.Sprintf("FUTURE ACCEPTED: an ingest stamped %s answered %d: %s", ts.Format(time.RFC3339), r.status, truncate(r.body)))
		return
	}
	w.led.mu.Lock()
	w.led.counts.FutureRefused++
	w.led.mu.Unlock()
}

// created reads an artifact's time of ingest, in Unix µs.
func (k *checker) created(ctx context.Context, id string) (int64, error) {
	r, err := k.c.do(ctx, "GET", "/v1/artifacts/"+id, k.admin, nil)
	if err != nil {
		return 0, err
	}
	var out struct {
		Created string `json:"created"`
	}
	if err := json.Unmarshal(r.body, &out); r.status != http.StatusOK || err != nil {
		return 0, fmt.Errorf("artifact %s answered %d: %s", id, r.status, truncate(r.body))
	}
	t, err := time.Parse(time.RFC3339Nano, out.Created)
	return t.UnixMicro(), err
}

func stamp(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339Nano) }
