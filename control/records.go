package control

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Record kinds: the engine stores kind k as WAL record type 32+k. Numbers are
// never reused.
const (
	kindTenant    uint8 = 0 // tenant created (with its first key) or plan changed
	kindAPIKey    uint8 = 1 // key created (SHA-256 only) or revoked
	kindUsage     uint8 = 2 // usage counter deltas and key last-used times
	kindJob       uint8 = 3 // jobs created, a job's status changed, a workspace's jobs erased
	kindWorkspace uint8 = 4 // workspace claimed or released
)

// Ops: the second byte of a record payload, per kind.
const (
	opTenantCreate byte = 1
	opTenantPlan   byte = 2

	opKeyCreate byte = 1
	opKeyRevoke byte = 2

	opUsageDelta byte = 1

	opJobsCreate byte = 1
	opJobStatus  byte = 2
	opJobsErase  byte = 3 // retired form (before erasure fences): removes every job of the workspace
	opJobsCancel byte = 4 // a workspace erased: its jobs accepted before the erasure end failed
	opJobsExpire byte = 5 // finished jobs past their retention removed

	opWorkspaceClaim   byte = 1
	opWorkspaceRelease byte = 2
)

var kindNames = [...]string{"tenant record", "api_key record", "usage record", "job record", "workspace record"}

// Decoded records; apply (state.go) takes one of these.
type (
	tenantCreateRec struct {
		tenant tenantState
		key    keyState // the tenant's first key: one record, so no tenant is ever without a key
	}
	planRec   struct{ tenantID, plan string }
	keyRec    struct{ key keyState }
	revokeRec struct {
		tenantID string
		keyID    uuid.UUID
	}
	usageRec struct {
		entries []usageEntry // sorted by (tenant, period)
		used    []lastUsed   // sorted by key id
	}
	jobsCreateRec struct {
		tenantID, ws string
		created      int64
		jobs         []jobInRec
	}
	jobInRec struct {
		id, artifact uuid.UUID
		idem         string
		input        []byte
	}
	statusRec struct {
		jobID  uuid.UUID
		status JobStatus
		at     int64
		errMsg string
	}
	eraseJobsRec  struct{ tenantID, ws string }
	cancelJobsRec struct {
		tenantID, ws string
		fence        uint64 // the erase record's seq: jobs created before it are cancelled
		at           int64
	}
	expireJobsRec struct{ ids []uuid.UUID } // in creation order
	workspaceRec  struct {
		release      bool
		tenantID, ws string
	}
)

type lastUsed struct {
	keyID uuid.UUID
	at    int64
}

func header(op byte) []byte { return []byte{formatVersion, op} }

func encodeTenantCreate(t tenantState, k keyState) []byte {
	b := header(opTenantCreate)
	b = appendString(b, t.id)
	b = appendString(b, t.email)
	b = appendString(b, t.plan)
	b = binary.AppendVarint(b, t.created)
	b = append(b, k.id[:]...)
	b = append(b, k.hash[:]...)
	return appendString(b, k.prefix)
}

func encodePlan(tenantID, plan string) []byte {
	return appendString(appendString(header(opTenantPlan), tenantID), plan)
}

func encodeKeyCreate(k keyState) []byte {
	b := appendString(header(opKeyCreate), k.tenantID)
	b = append(b, k.id[:]...)
	b = append(b, k.hash[:]...)
	b = appendString(b, k.prefix)
	return binary.AppendVarint(b, k.created)
}

func encodeRevoke(tenantID string, keyID uuid.UUID) []byte {
	return append(appendString(header(opKeyRevoke), tenantID), keyID[:]...)
}

// encodeUsage sorts what it writes, so equal deltas encode to equal bytes.
func encodeUsage(deltas map[usageKey]*counts, used map[uuid.UUID]int64) []byte {
	b := header(opUsageDelta)
	b = appendUsage(b, deltas)
	ids := make([]uuid.UUID, 0, len(used))
	for id := range used {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(string(a[:]), string(b[:])) })
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = append(b, id[:]...)
		b = binary.AppendVarint(b, used[id])
	}
	return b
}

func encodeJobsCreate(r jobsCreateRec) []byte {
	b := appendString(header(opJobsCreate), r.tenantID)
	b = appendString(b, r.ws)
	b = binary.AppendVarint(b, r.created)
	b = binary.AppendUvarint(b, uint64(len(r.jobs)))
	for _, j := range r.jobs {
		b = append(b, j.id[:]...)
		b = append(b, j.artifact[:]...)
		b = appendString(b, j.idem)
		b = appendBytes(b, j.input)
	}
	return b
}

func encodeStatus(r statusRec) []byte {
	b := append(header(opJobStatus), r.jobID[:]...)
	b = append(b, statusCode(r.status))
	b = binary.AppendVarint(b, r.at)
	return appendString(b, r.errMsg)
}

func encodeCancelJobs(r cancelJobsRec) []byte {
	b := appendString(appendString(header(opJobsCancel), r.tenantID), r.ws)
	b = binary.AppendUvarint(b, r.fence)
	return binary.AppendVarint(b, r.at)
}

func encodeExpireJobs(r expireJobsRec) []byte {
	b := binary.AppendUvarint(header(opJobsExpire), uint64(len(r.ids)))
	for _, id := range r.ids {
		b = append(b, id[:]...)
	}
	return b
}

func encodeWorkspace(release bool, tenantID, ws string) []byte {
	op := opWorkspaceClaim
	if release {
		op = opWorkspaceRelease
	}
	return appendString(appendString(header(op), tenantID), ws)
}

// decodeRecord parses and validates one record payload. It checks the
// record on its own (formats, enumerations, bounds); checks against the
// state are apply's.
func decodeRecord(kind uint8, payload []byte) (any, error) {
	if int(kind) >= len(kindNames) {
		return nil, fmt.Errorf("control: unknown record kind %d", kind)
	}
	d := newDecoder(kindNames[kind], payload)
	op := d.header()
	if d.Err != nil {
		return nil, d.Err
	}
	var rec any
	switch {
	case kind == kindTenant && op == opTenantCreate:
		r := tenantCreateRec{}
		r.tenant = tenantState{id: d.Str("tenant id"), email: d.Str("email"), plan: d.Str("plan"), created: d.Varint("created at")}
		r.key = keyState{tenantID: r.tenant.id, id: d.uuid("key id"), hash: d.hash("key hash"), prefix: d.Str("key prefix"), created: r.tenant.created}
		d.check("tenant", validTenant(r.tenant))
		d.check("key", validKey(r.key))
		rec = r
	case kind == kindTenant && op == opTenantPlan:
		r := planRec{tenantID: d.Str("tenant id"), plan: d.Str("plan")}
		d.check("plan", validPlanName(r.plan))
		rec = r
	case kind == kindAPIKey && op == opKeyCreate:
		k := keyState{tenantID: d.Str("tenant id"), id: d.uuid("key id"), hash: d.hash("key hash"), prefix: d.Str("key prefix"), created: d.Varint("created at")}
		d.check("key", validKey(k))
		rec = keyRec{k}
	case kind == kindAPIKey && op == opKeyRevoke:
		rec = revokeRec{tenantID: d.Str("tenant id"), keyID: d.uuid("key id")}
	case kind == kindUsage && op == opUsageDelta:
		r := usageRec{entries: decodeUsage(d)}
		n := d.Count("last-used count", 17)
		for i := 0; i < n && d.Err == nil; i++ {
			at := d.Off
			u := lastUsed{keyID: d.uuid("key id"), at: d.Varint("last used at")}
			if d.Err == nil && i > 0 && string(u.keyID[:]) <= string(r.used[i-1].keyID[:]) {
				d.Failf("key id", at, "last-used entries not in ascending key order")
			}
			d.check("last used at", validTimeErr(u.at))
			r.used = append(r.used, u)
		}
		rec = r
	case kind == kindJob && op == opJobsCreate:
		r := jobsCreateRec{tenantID: d.Str("tenant id"), ws: d.Str("workspace"), created: d.Varint("created at")}
		d.check("workspace", validWorkspace(r.ws))
		d.check("created at", validTimeErr(r.created))
		n := d.Count("job count", 34)
		if d.Err == nil && n == 0 {
			d.Failf("job count", d.Off, "no jobs")
		}
		for i := 0; i < n && d.Err == nil; i++ {
			j := jobInRec{id: d.uuid("job id"), artifact: d.uuid("artifact id"), idem: d.Str("idempotency key"), input: d.bytes("input")}
			if d.Err == nil && (j.id == uuid.Nil || j.artifact == uuid.Nil) {
				d.Failf("job id", d.Off, "nil job or artifact id")
			}
			r.jobs = append(r.jobs, j)
		}
		rec = r
	case kind == kindJob && op == opJobStatus:
		r := statusRec{jobID: d.uuid("job id")}
		at := d.Off
		code := d.Byte("status")
		r.status = statusOf(code)
		if d.Err == nil && (r.status == "" || r.status == StatusPending) {
			d.Failf("status", at, "bad status code %d", code)
		}
		r.at = d.Varint("updated at")
		r.errMsg = d.Str("error message")
		d.check("updated at", validTimeErr(r.at))
		if d.Err == nil && r.errMsg != "" && r.status != StatusFailed {
			d.Failf("error message", at, "error message on a %s job", r.status)
		}
		rec = r
	case kind == kindJob && op == opJobsErase:
		rec = eraseJobsRec{tenantID: d.Str("tenant id"), ws: d.Str("workspace")}
	case kind == kindJob && op == opJobsCancel:
		r := cancelJobsRec{tenantID: d.Str("tenant id"), ws: d.Str("workspace")}
		at := d.Off
		r.fence = d.Uvarint("fence")
		if d.Err == nil && r.fence == 0 {
			d.Failf("fence", at, "fence 0")
		}
		r.at = d.Varint("updated at")
		d.check("workspace", validWorkspace(r.ws))
		d.check("updated at", validTimeErr(r.at))
		rec = r
	case kind == kindJob && op == opJobsExpire:
		n := d.Count("job count", 16)
		if d.Err == nil && n == 0 {
			d.Failf("job count", d.Off, "no jobs")
		}
		r := expireJobsRec{ids: make([]uuid.UUID, 0, n)}
		for i := 0; i < n && d.Err == nil; i++ {
			r.ids = append(r.ids, d.uuid("job id"))
		}
		rec = r
	case kind == kindWorkspace && (op == opWorkspaceClaim || op == opWorkspaceRelease):
		r := workspaceRec{release: op == opWorkspaceRelease, tenantID: d.Str("tenant id"), ws: d.Str("workspace")}
		d.check("workspace", validWorkspace(r.ws))
		rec = r
	default:
		d.Failf("op", 1, "unknown op %d", op)
	}
	d.End("end")
	if d.Err != nil {
		return nil, d.Err
	}
	return rec, nil
}

// check records a validation failure of the field just read.
func (d *decoder) check(field string, err error) {
	if d.Err == nil && err != nil {
		d.Failf(field, d.Off, "%v", err)
	}
}

// appendUsage writes usage entries sorted by (tenant, period), endpoints by
// name; the usage record and the snapshot share it.
func appendUsage(b []byte, m map[usageKey]*counts) []byte {
	keys := make([]usageKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareUsageKey)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		c := m[k]
		b = appendString(b, k.tenant)
		b = appendString(b, k.period)
		names := make([]string, 0, len(c.requests))
		for name := range c.requests {
			names = append(names, name)
		}
		slices.Sort(names)
		b = binary.AppendUvarint(b, uint64(len(names)))
		for _, name := range names {
			b = appendString(b, name)
			b = binary.AppendUvarint(b, c.requests[name])
		}
		for _, v := range [...]uint64{c.artifacts, c.rawBytes, c.packs, c.tokens, c.rateLimited} {
			b = binary.AppendUvarint(b, v)
		}
	}
	return b
}

func decodeUsage(d *decoder) []usageEntry {
	n := d.Count("usage count", 8)
	var out []usageEntry
	for i := 0; i < n && d.Err == nil; i++ {
		at := d.Off
		e := usageEntry{key: usageKey{tenant: d.Str("usage tenant"), period: d.Str("usage period")}, c: &counts{}}
		if d.Err == nil && i > 0 && compareUsageKey(out[i-1].key, e.key) >= 0 {
			d.Failf("usage tenant", at, "usage entries not in ascending (tenant, period) order")
		}
		if d.Err == nil && e.key.tenant == "" {
			d.Failf("usage tenant", at, "empty tenant")
		}
		d.check("usage period", validPeriod(e.key.period))
		nr := d.Count("request count", 2)
		prev := ""
		for j := 0; j < nr && d.Err == nil; j++ {
			at := d.Off
			name, v := d.Str("endpoint"), d.Uvarint("requests")
			if d.Err == nil && name <= prev {
				d.Failf("endpoint", at, "endpoints empty or not in ascending order")
			}
			if e.c.requests == nil {
				e.c.requests = make(map[string]uint64, nr)
			}
			e.c.requests[name] = v
			prev = name
		}
		e.c.artifacts, e.c.rawBytes, e.c.packs = d.Uvarint("artifacts"), d.Uvarint("raw bytes"), d.Uvarint("packs")
		e.c.tokens, e.c.rateLimited = d.Uvarint("tokens"), d.Uvarint("rate limited")
		out = append(out, e)
	}
	return out
}

func compareUsageKey(a, b usageKey) int { return comparePair(a.tenant, a.period, b.tenant, b.period) }

// comparePair orders string pairs by their first, then their second string.
func comparePair(a1, a2, b1, b2 string) int {
	if c := strings.Compare(a1, b1); c != 0 {
		return c
	}
	return strings.Compare(a2, b2)
}

func statusCode(s JobStatus) byte {
	switch s {
	case StatusPending:
		return 1
	case StatusProcessing:
		return 2
	case StatusDone:
		return 3
	case StatusFailed:
		return 4
	}
	return 0
}

func statusOf(code byte) JobStatus {
	switch code {
	case 1:
		return StatusPending
	case 2:
		return StatusProcessing
	case 3:
		return StatusDone
	case 4:
		return StatusFailed
	}
	return ""
}
