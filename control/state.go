package control

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// state is the applied control state: what the records in the WAL (and the
// snapshot they start from) say. It changes only in apply and decodeSnapshot;
// Store guards it.
type state struct {
	seq        uint64 // highest applied record seq
	tenants    map[string]*tenantState
	emails     map[string]string // lower-case email -> tenant id
	keys       map[uuid.UUID]*keyState
	byHash     map[[32]byte]*keyState
	tenantKeys map[string][]*keyState
	workspaces map[string]map[string]struct{} // tenant -> owned workspaces
	usage      map[usageKey]*counts
	jobs       map[uuid.UUID]*jobState
	unfinished map[uuid.UUID]*jobState
	byArtifact map[uuid.UUID]*jobState // latest job of an artifact
	byIdem     map[idemKey][]*jobState // unfinished jobs of an idempotency key, in creation order
	// inputsGen changes whenever the set of unfinished jobs' inputs does
	// (in memory only), so the payloads file is rewritten only then.
	inputsGen uint64
	// Per tenant, the unfinished jobs and the bytes of their inputs (in
	// memory only): CreateJobs bounds the backlog with them.
	backlog map[string]backlog
}

type backlog struct {
	jobs  int
	bytes int64
}

func (s *state) addBacklog(j *jobState, jobs int, bytes int64) {
	b := s.backlog[j.tenantID]
	b.jobs += jobs
	b.bytes += bytes
	if b.jobs == 0 {
		delete(s.backlog, j.tenantID)
		return
	}
	s.backlog[j.tenantID] = b
}

type tenantState struct {
	id, email, plan string
	created         int64 // Unix µs
}

type keyState struct {
	id       uuid.UUID
	tenantID string
	hash     [32]byte // SHA-256 of the secret
	prefix   string
	created  int64
	lastUsed int64 // Unix µs, meaningful when used
	used     bool
	revoked  bool
}

type usageKey struct{ tenant, period string }

type usageEntry struct {
	key usageKey
	c   *counts
}

// counts are the usage counters of one tenant and period.
type counts struct {
	requests                                        map[string]uint64
	artifacts, rawBytes, packs, tokens, rateLimited uint64
}

func (c *counts) add(o *counts) {
	for name, n := range o.requests {
		if c.requests == nil {
			c.requests = make(map[string]uint64)
		}
		c.requests[name] += n
	}
	c.artifacts += o.artifacts
	c.rawBytes += o.rawBytes
	c.packs += o.packs
	c.tokens += o.tokens
	c.rateLimited += o.rateLimited
}

type jobState struct {
	id, artifact uuid.UUID
	tenantID, ws string
	idem         string
	status       JobStatus
	created      int64
	updated      int64
	errMsg       string
	seq          uint64 // seq of the record that created the job, then
	idx          int    // its place in that record: together the creation order
	input        []byte // only while pending or processing
}

type idemKey struct{ tenant, ws, key string }

// wsKey names a workspace of a tenant.
type wsKey struct{ tenant, ws string }

func compareWSKey(a, b wsKey) int { return comparePair(a.tenant, a.ws, b.tenant, b.ws) }

func (j *jobState) finished() bool { return j.status == StatusDone || j.status == StatusFailed }

func compareJobs(a, b *jobState) int {
	if c := cmp.Compare(a.seq, b.seq); c != 0 {
		return c
	}
	return cmp.Compare(a.idx, b.idx)
}

func newState() *state {
	return &state{
		tenants:    make(map[string]*tenantState),
		emails:     make(map[string]string),
		keys:       make(map[uuid.UUID]*keyState),
		byHash:     make(map[[32]byte]*keyState),
		tenantKeys: make(map[string][]*keyState),
		workspaces: make(map[string]map[string]struct{}),
		usage:      make(map[usageKey]*counts),
		jobs:       make(map[uuid.UUID]*jobState),
		unfinished: make(map[uuid.UUID]*jobState),
		byArtifact: make(map[uuid.UUID]*jobState),
		byIdem:     make(map[idemKey][]*jobState),
		backlog:    make(map[string]backlog),
	}
}

// hasTenant reports whether id is a registered tenant or the built-in one.
func (s *state) hasTenant(id string) bool {
	_, ok := s.tenants[id]
	return ok || id == DefaultTenant
}

var errConflict = errors.New("control: record conflicts with the state")

func conflict(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errConflict, fmt.Sprintf(format, args...))
}

// apply applies one decoded record. It checks everything first and changes
// nothing when it returns an error. Changes the live store can race with (a
// job status after its workspace was erased) are ignored rather than refused.
func (s *state) apply(rec any, seq uint64) error {
	switch r := rec.(type) {
	case tenantCreateRec:
		if _, dup := s.tenants[r.tenant.id]; dup {
			return conflict("tenant %s exists", r.tenant.id)
		}
		if _, dup := s.emails[strings.ToLower(r.tenant.email)]; dup {
			return conflict("email of tenant %s is taken", r.tenant.id)
		}
		if err := s.checkNewKey(r.key); err != nil {
			return err
		}
		t := r.tenant
		s.addTenant(&t)
		k := r.key
		s.addKey(&k)
	case planRec:
		t := s.tenants[r.tenantID]
		if t == nil {
			return conflict("plan of unknown tenant %q", r.tenantID)
		}
		t.plan = r.plan
	case keyRec:
		if _, ok := s.tenants[r.key.tenantID]; !ok {
			return conflict("key of unknown tenant %q", r.key.tenantID)
		}
		if err := s.checkNewKey(r.key); err != nil {
			return err
		}
		k := r.key
		s.addKey(&k)
	case revokeRec:
		k := s.keys[r.keyID]
		if k == nil || k.tenantID != r.tenantID {
			return conflict("revoke of unknown key %s", r.keyID)
		}
		k.revoked = true
	case usageRec:
		for _, e := range r.entries {
			c := s.usage[e.key]
			if c == nil {
				c = &counts{}
				s.usage[e.key] = c
			}
			c.add(e.c)
		}
		for _, u := range r.used {
			if k := s.keys[u.keyID]; k != nil && (!k.used || u.at > k.lastUsed) {
				k.lastUsed, k.used = u.at, true
			}
		}
	case jobsCreateRec:
		if !s.hasTenant(r.tenantID) {
			return conflict("jobs of unknown tenant %q", r.tenantID)
		}
		seen := make(map[uuid.UUID]bool, len(r.jobs))
		for _, j := range r.jobs {
			if _, dup := s.jobs[j.id]; dup || seen[j.id] {
				return conflict("job %s exists", j.id)
			}
			seen[j.id] = true
		}
		s.inputsGen++
		for i, j := range r.jobs {
			s.addJob(&jobState{id: j.id, artifact: j.artifact, tenantID: r.tenantID, ws: r.ws, idem: j.idem,
				status: StatusPending, created: r.created, updated: r.created, seq: seq, idx: i, input: j.input})
		}
	case statusRec:
		j := s.jobs[r.jobID]
		if j == nil || j.finished() {
			return nil // erased or finished meanwhile: the change is moot
		}
		j.status, j.updated, j.errMsg = r.status, r.at, r.errMsg
		if j.finished() {
			s.unindexUnfinished(j)
			j.input = nil
		}
	case eraseJobsRec:
		for _, j := range s.jobs {
			if j.tenantID == r.tenantID && j.ws == r.ws {
				s.removeJob(j)
			}
		}
	case cancelJobsRec:
		for _, j := range s.unfinished {
			if j.tenantID == r.tenantID && j.ws == r.ws && j.seq < r.fence {
				j.status, j.updated, j.errMsg = StatusFailed, r.at, ErasedMessage
				s.unindexUnfinished(j)
				j.input = nil
			}
		}
	case expireJobsRec:
		for _, id := range r.ids {
			if j := s.jobs[id]; j != nil && j.finished() { // gone or resumed meanwhile: moot
				s.removeJob(j)
			}
		}
	case workspaceRec:
		if r.release {
			delete(s.workspaces[r.tenantID], r.ws)
			if len(s.workspaces[r.tenantID]) == 0 {
				delete(s.workspaces, r.tenantID)
			}
			break
		}
		if !s.hasTenant(r.tenantID) {
			return conflict("workspace of unknown tenant %q", r.tenantID)
		}
		s.addWorkspace(r.tenantID, r.ws)
	default:
		return fmt.Errorf("control: unknown record %T", rec)
	}
	s.seq = seq
	return nil
}

func (s *state) checkNewKey(k keyState) error {
	if _, dup := s.keys[k.id]; dup {
		return conflict("key %s exists", k.id)
	}
	if _, dup := s.byHash[k.hash]; dup {
		return conflict("key %s repeats a key hash", k.id)
	}
	return nil
}

func (s *state) addTenant(t *tenantState) {
	s.tenants[t.id] = t
	s.emails[strings.ToLower(t.email)] = t.id
}

func (s *state) addKey(k *keyState) {
	s.keys[k.id] = k
	s.byHash[k.hash] = k
	s.tenantKeys[k.tenantID] = append(s.tenantKeys[k.tenantID], k)
}

func (s *state) addWorkspace(tenantID, ws string) {
	m := s.workspaces[tenantID]
	if m == nil {
		m = make(map[string]struct{})
		s.workspaces[tenantID] = m
	}
	m[ws] = struct{}{}
}

// addJob indexes a job; jobs must be added in creation order.
func (s *state) addJob(j *jobState) {
	s.jobs[j.id] = j
	s.byArtifact[j.artifact] = j
	if j.finished() {
		return
	}
	s.unfinished[j.id] = j
	s.addBacklog(j, 1, int64(len(j.input)))
	if j.idem != "" {
		k := idemKey{j.tenantID, j.ws, j.idem}
		s.byIdem[k] = append(s.byIdem[k], j)
	}
}

func (s *state) unindexUnfinished(j *jobState) {
	if _, ok := s.unfinished[j.id]; ok {
		s.inputsGen++
		s.addBacklog(j, -1, -int64(len(j.input)))
	}
	delete(s.unfinished, j.id)
	if j.idem == "" {
		return
	}
	k := idemKey{j.tenantID, j.ws, j.idem}
	list := slices.DeleteFunc(s.byIdem[k], func(o *jobState) bool { return o == j })
	if len(list) == 0 {
		delete(s.byIdem, k)
	} else {
		s.byIdem[k] = list
	}
}

func (s *state) removeJob(j *jobState) {
	delete(s.jobs, j.id)
	if s.byArtifact[j.artifact] == j {
		delete(s.byArtifact, j.artifact)
	}
	s.unindexUnfinished(j)
}

// encodeSnapshot writes the whole state, every collection sorted, so equal
// states encode to equal bytes (docs/format/control.md).
func (s *state) encodeSnapshot() []byte {
	b := []byte{snapshotVersion}
	b = binary.AppendUvarint(b, s.seq)

	tenants := sortedValues(s.tenants, func(a, b *tenantState) int { return strings.Compare(a.id, b.id) })
	b = binary.AppendUvarint(b, uint64(len(tenants)))
	for _, t := range tenants {
		b = appendString(b, t.id)
		b = appendString(b, t.email)
		b = appendString(b, t.plan)
		b = binary.AppendVarint(b, t.created)
	}

	keys := sortedValues(s.keys, func(a, b *keyState) int { return strings.Compare(string(a.id[:]), string(b.id[:])) })
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = append(b, k.id[:]...)
		b = appendString(b, k.tenantID)
		b = append(b, k.hash[:]...)
		b = appendString(b, k.prefix)
		b = binary.AppendVarint(b, k.created)
		var flags byte
		if k.revoked {
			flags |= flagRevoked
		}
		if k.used {
			flags |= flagUsed
		}
		b = append(b, flags)
		if k.used {
			b = binary.AppendVarint(b, k.lastUsed)
		}
	}

	var ws []wsKey
	for t, m := range s.workspaces {
		for w := range m {
			ws = append(ws, wsKey{t, w})
		}
	}
	slices.SortFunc(ws, compareWSKey)
	b = binary.AppendUvarint(b, uint64(len(ws)))
	for _, w := range ws {
		b = appendString(appendString(b, w.tenant), w.ws)
	}

	b = appendUsage(b, s.usage)

	jobs := sortedValues(s.jobs, compareJobs)
	b = binary.AppendUvarint(b, uint64(len(jobs)))
	for _, j := range jobs {
		b = append(b, j.id[:]...)
		b = appendString(b, j.tenantID)
		b = appendString(b, j.ws)
		b = append(b, j.artifact[:]...)
		b = appendString(b, j.idem)
		b = append(b, statusCode(j.status))
		b = binary.AppendVarint(b, j.created)
		b = binary.AppendVarint(b, j.updated)
		b = appendString(b, j.errMsg)
		b = binary.AppendUvarint(b, j.seq)
		b = binary.AppendUvarint(b, uint64(j.idx))
	}
	return b
}

// Snapshot versions: 2 keeps job inputs out (they are in the payloads
// file, see SnapshotPayloads); 1, which carried them, is still read.
const (
	snapshotVersion           byte = 2
	snapshotVersionWithInputs byte = 1
)

const (
	flagRevoked byte = 1 << 0
	flagUsed    byte = 1 << 1
)

func sortedValues[K comparable, V any](m map[K]V, compare func(a, b V) int) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, compare)
	return out
}

// decodeSnapshot parses and validates a snapshot payload into a new state.
// It requires what encodeSnapshot guarantees: canonical order, no
// duplicates, every reference resolved.
func decodeSnapshot(b []byte) (*state, error) {
	d := newDecoder("snapshot", b)
	version := d.Byte("version")
	if d.Err == nil && version != snapshotVersion && version != snapshotVersionWithInputs {
		d.Failf("version", 0, "unsupported version %d", version)
	}
	s := newState()
	s.seq = d.Uvarint("applied seq")

	n := d.Count("tenant count", 4)
	var prevTenant string
	for i := 0; i < n && d.Err == nil; i++ {
		at := d.Off
		t := &tenantState{id: d.Str("tenant id"), email: d.Str("email"), plan: d.Str("plan"), created: d.Varint("created at")}
		d.check("tenant", validTenant(*t))
		if d.Err == nil && i > 0 && t.id <= prevTenant {
			d.Failf("tenant id", at, "tenants not in ascending id order")
		}
		if _, dup := s.emails[strings.ToLower(t.email)]; d.Err == nil && dup {
			d.Failf("email", at, "email of tenant %s repeats another tenant's", t.id)
		}
		if d.Err == nil {
			s.addTenant(t)
			prevTenant = t.id
		}
	}

	n = d.Count("key count", 16+1+32+1+1+1)
	var prevKey uuid.UUID
	for i := 0; i < n && d.Err == nil; i++ {
		at := d.Off
		k := &keyState{id: d.uuid("key id"), tenantID: d.Str("key tenant"), hash: d.hash("key hash"), prefix: d.Str("key prefix"), created: d.Varint("created at")}
		flags := d.Byte("key flags")
		if flags&^(flagRevoked|flagUsed) != 0 {
			d.Failf("key flags", d.Off-1, "unknown flags %#x", flags)
		}
		k.revoked, k.used = flags&flagRevoked != 0, flags&flagUsed != 0
		if k.used {
			k.lastUsed = d.Varint("last used at")
			d.check("last used at", validTimeErr(k.lastUsed))
		}
		d.check("key", validKey(*k))
		if d.Err == nil && i > 0 && string(k.id[:]) <= string(prevKey[:]) {
			d.Failf("key id", at, "keys not in ascending id order")
		}
		if _, ok := s.tenants[k.tenantID]; d.Err == nil && !ok {
			d.Failf("key tenant", at, "key of unknown tenant %q", k.tenantID)
		}
		if _, dup := s.byHash[k.hash]; d.Err == nil && dup {
			d.Failf("key hash", at, "repeated key hash")
		}
		if d.Err == nil {
			s.addKey(k)
			prevKey = k.id
		}
	}

	n = d.Count("workspace count", 2)
	var prevWS wsKey
	for i := 0; i < n && d.Err == nil; i++ {
		at := d.Off
		w := wsKey{d.Str("workspace tenant"), d.Str("workspace")}
		d.check("workspace", validWorkspace(w.ws))
		if d.Err == nil && i > 0 && compareWSKey(prevWS, w) >= 0 {
			d.Failf("workspace", at, "workspaces not in ascending order")
		}
		if d.Err == nil && !s.hasTenant(w.tenant) {
			d.Failf("workspace tenant", at, "workspace of unknown tenant %q", w.tenant)
		}
		if d.Err == nil {
			s.addWorkspace(w.tenant, w.ws)
			prevWS = w
		}
	}

	for _, e := range decodeUsage(d) {
		s.usage[e.key] = e.c
	}

	n = d.Count("job count", 16+1+1+16+1+1+1+1+1+1+1)
	var prevJob *jobState
	for i := 0; i < n && d.Err == nil; i++ {
		at := d.Off
		j := &jobState{id: d.uuid("job id"), tenantID: d.Str("job tenant"), ws: d.Str("job workspace"), artifact: d.uuid("artifact id"), idem: d.Str("idempotency key")}
		code := d.Byte("status")
		j.status = statusOf(code)
		j.created, j.updated = d.Varint("created at"), d.Varint("updated at")
		j.errMsg = d.Str("error message")
		j.seq = d.Uvarint("creation seq")
		idx := d.Uvarint("creation index")
		j.idx = int(min(idx, 1<<31))
		if version == snapshotVersionWithInputs {
			j.input = d.bytes("input")
		}
		switch {
		case d.Err != nil:
		case j.status == "":
			d.Failf("status", at, "bad status code %d", code)
		case j.id == uuid.Nil || j.artifact == uuid.Nil:
			d.Failf("job id", at, "nil job or artifact id")
		case validWorkspace(j.ws) != nil:
			d.Failf("job workspace", at, "%v", validWorkspace(j.ws))
		case !s.hasTenant(j.tenantID):
			d.Failf("job tenant", at, "job of unknown tenant %q", j.tenantID)
		case !validTime(j.created) || !validTime(j.updated):
			d.Failf("created at", at, "time out of range")
		case j.errMsg != "" && j.status != StatusFailed:
			d.Failf("error message", at, "error message on a %s job", j.status)
		case len(j.input) != 0 && j.finished():
			d.Failf("input", at, "input kept on a %s job", j.status)
		case j.seq == 0 || j.seq > s.seq || idx >= 1<<31:
			d.Failf("creation seq", at, "creation (%d, %d) out of range", j.seq, idx)
		case prevJob != nil && compareJobs(prevJob, j) >= 0:
			d.Failf("creation seq", at, "jobs not in ascending creation order")
		case s.jobs[j.id] != nil:
			d.Failf("job id", at, "repeated job id %s", j.id)
		default:
			s.addJob(j)
			prevJob = j
		}
	}
	d.End("end")
	if d.Err != nil {
		return nil, d.Err
	}
	return s, nil
}
