package control

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Key secrets are secretPrefix followed by secretChars base62 characters.
const (
	secretPrefix = "lk_"
	secretChars  = 43 // 43 × log2(62) ≈ 256 bits
	secretLength = len(secretPrefix) + secretChars
	prefixLength = 8 // shown for display: "lk_" and 5 characters
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func isBase62(s string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(base62, s[i]) < 0 {
			return false
		}
	}
	return true
}

// newSecret returns a fresh key secret. Random bytes of 248 or more are
// rejected, so that every character is equally likely (248 = 4 × 62).
func newSecret() (string, error) {
	out := make([]byte, 0, secretLength)
	out = append(out, secretPrefix...)
	buf := make([]byte, 64)
	for len(out) < secretLength {
		if _, err := rand.Read(buf); err != nil {
			return "", err
		}
		for _, c := range buf {
			if c < 248 && len(out) < secretLength {
				out = append(out, base62[c%62])
			}
		}
	}
	return string(out), nil
}

// newKey makes a key with a fresh id and secret for tenantID.
func newKey(tenantID string, created int64) (keyState, string, error) {
	id, err := uuid.NewRandom()
	if err != nil {
		return keyState{}, "", err
	}
	secret, err := newSecret()
	if err != nil {
		return keyState{}, "", err
	}
	return keyState{id: id, tenantID: tenantID, hash: sha256.Sum256([]byte(secret)), prefix: secret[:prefixLength], created: created}, secret, nil
}

// Register creates a tenant on plan (free when empty) together with its
// first API key, in one record, and returns the key's secret: the only time
// it is shown. Emails are unique regardless of case.
func (s *Store) Register(email, plan string) (Tenant, string, error) {
	if plan == "" {
		plan = "free"
	}
	if err := checkEmail(email); err != nil {
		return Tenant{}, "", err
	}
	if err := validPlanName(plan); err != nil {
		return Tenant{}, "", err
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	s.mu.RLock()
	_, dup := s.st.emails[strings.ToLower(email)]
	s.mu.RUnlock()
	if dup {
		return Tenant{}, "", ErrDuplicateEmail
	}
	id, err := uuid.NewRandom()
	if err != nil {
		return Tenant{}, "", err
	}
	t := tenantState{id: id.String(), email: email, plan: plan, created: micros(s.now())}
	k, secret, err := newKey(t.id, t.created)
	if err != nil {
		return Tenant{}, "", err
	}
	if err := s.append(kindTenant, encodeTenantCreate(t, k)); err != nil {
		return Tenant{}, "", err
	}
	return t.public(), secret, nil
}

func (t *tenantState) public() Tenant {
	return Tenant{ID: t.id, Email: t.email, Plan: t.plan, CreatedAt: fromMicros(t.created)}
}

// Tenant returns a registered tenant, or the built-in DefaultTenant.
func (s *Store) Tenant(id string) (Tenant, bool) {
	if id == DefaultTenant {
		return Tenant{ID: DefaultTenant, Plan: "enterprise"}, true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.st.tenants[id]
	if t == nil {
		return Tenant{}, false
	}
	return t.public(), true
}

// Tenants lists the built-in DefaultTenant, then the registered tenants by
// id.
func (s *Store) Tenants() []Tenant {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Tenant, 0, len(s.st.tenants)+1)
	for _, t := range s.st.tenants {
		out = append(out, t.public())
	}
	slices.SortFunc(out, func(a, b Tenant) int { return strings.Compare(a.ID, b.ID) })
	return append([]Tenant{{ID: DefaultTenant, Plan: "enterprise"}}, out...)
}

// SetPlan moves a tenant to another plan. Workspaces it owns beyond the new
// plan's limit stay; it cannot claim more until it is under the limit.
func (s *Store) SetPlan(tenantID, plan string) (Tenant, error) {
	if err := validPlanName(plan); err != nil {
		return Tenant{}, err
	}
	if tenantID == DefaultTenant {
		return Tenant{}, ErrBuiltinTenant
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	t, ok := s.Tenant(tenantID)
	if !ok {
		return Tenant{}, ErrNotFound
	}
	if t.Plan == plan {
		return t, nil
	}
	if err := s.append(kindTenant, encodePlan(tenantID, plan)); err != nil {
		return Tenant{}, err
	}
	t.Plan = plan
	return t, nil
}

// WellFormedKey reports whether secret has the form of a key secret
// (secretPrefix and secretChars characters), whether or not a tenant holds
// it.
func WellFormedKey(secret string) bool {
	return len(secret) == secretLength && strings.HasPrefix(secret, secretPrefix)
}

// Authenticate returns the tenant and key of a secret. It looks the key up
// by the SHA-256 of the secret and compares hashes in constant time; a
// revoked key fails. The key's last-used time is kept in memory and written
// with the next usage record.
func (s *Store) Authenticate(secret string) (Tenant, KeyInfo, bool) {
	if !WellFormedKey(secret) {
		return Tenant{}, KeyInfo{}, false
	}
	h := sha256.Sum256([]byte(secret))
	now := micros(s.now())
	s.mu.Lock()
	k := s.st.byHash[h]
	if k == nil || subtle.ConstantTimeCompare(k.hash[:], h[:]) != 1 || k.revoked {
		s.mu.Unlock()
		return Tenant{}, KeyInfo{}, false
	}
	t := s.st.tenants[k.tenantID]
	if t == nil {
		s.mu.Unlock()
		return Tenant{}, KeyInfo{}, false
	}
	if old, ok := s.pendingUsed[k.id]; validTime(now) && (!ok || now > old) {
		s.pendingUsed[k.id] = now
	}
	info := s.keyInfoLocked(k)
	s.mu.Unlock()
	s.signal()
	return t.public(), info, true
}

// keyInfoLocked describes k with its latest last-used time, flushed or not.
func (s *Store) keyInfoLocked(k *keyState) KeyInfo {
	info := KeyInfo{ID: k.id.String(), TenantID: k.tenantID, Prefix: k.prefix, CreatedAt: fromMicros(k.created), Revoked: k.revoked}
	last, used := k.lastUsed, k.used
	for _, m := range [...]map[uuid.UUID]int64{s.inflightUsed, s.pendingUsed} {
		if at, ok := m[k.id]; ok && (!used || at > last) {
			last, used = at, true
		}
	}
	if used {
		t := fromMicros(last)
		info.LastUsedAt = &t
	}
	return info
}

// CreateKey adds a key to a tenant and returns its secret, shown only now.
func (s *Store) CreateKey(tenantID string) (KeyInfo, string, error) {
	if tenantID == DefaultTenant {
		return KeyInfo{}, "", ErrBuiltinTenant
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	if _, ok := s.Tenant(tenantID); !ok {
		return KeyInfo{}, "", ErrNotFound
	}
	k, secret, err := newKey(tenantID, micros(s.now()))
	if err != nil {
		return KeyInfo{}, "", err
	}
	if err := s.append(kindAPIKey, encodeKeyCreate(k)); err != nil {
		return KeyInfo{}, "", err
	}
	return KeyInfo{ID: k.id.String(), TenantID: tenantID, Prefix: k.prefix, CreatedAt: fromMicros(k.created)}, secret, nil
}

// Keys lists a tenant's keys, revoked ones included, by creation time then id.
func (s *Store) Keys(tenantID string) []KeyInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]KeyInfo, 0, len(s.st.tenantKeys[tenantID]))
	for _, k := range s.st.tenantKeys[tenantID] {
		out = append(out, s.keyInfoLocked(k))
	}
	slices.SortFunc(out, func(a, b KeyInfo) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// RevokeKey revokes one of the tenant's keys; it fails at once. Another
// tenant's key id is ErrNotFound, so ids do not leak. Revoking the tenant's
// last unrevoked key is ErrLastKey; revoking a revoked key changes nothing.
func (s *Store) RevokeKey(tenantID, keyID string) (KeyInfo, error) {
	id, err := uuid.Parse(keyID)
	if err != nil {
		return KeyInfo{}, ErrNotFound
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	s.mu.RLock()
	k := s.st.keys[id]
	if k == nil || k.tenantID != tenantID {
		s.mu.RUnlock()
		return KeyInfo{}, ErrNotFound
	}
	info := s.keyInfoLocked(k)
	live := 0
	for _, o := range s.st.tenantKeys[tenantID] {
		if !o.revoked {
			live++
		}
	}
	s.mu.RUnlock()
	if info.Revoked {
		return info, nil
	}
	if live <= 1 {
		return KeyInfo{}, ErrLastKey
	}
	if err := s.append(kindAPIKey, encodeRevoke(tenantID, id)); err != nil {
		return KeyInfo{}, err
	}
	info.Revoked = true
	return info, nil
}

// ClaimWorkspace records that the tenant owns ws. Owning it already is a
// no-op; a new workspace beyond the plan's limit is a *WorkspaceQuotaError
// (ErrWorkspaceQuota).
func (s *Store) ClaimWorkspace(tenantID, ws string) error {
	if err := validWorkspace(ws); err != nil {
		return err
	}
	if s.owns(tenantID, ws) {
		return nil // the common case: no lock, no record
	}
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	t, ok := s.Tenant(tenantID)
	if !ok {
		return ErrNotFound
	}
	s.mu.RLock()
	owned := len(s.st.workspaces[tenantID])
	_, has := s.st.workspaces[tenantID][ws]
	s.mu.RUnlock()
	if has {
		return nil
	}
	if p, _ := PlanByName(t.Plan); p.Workspaces > 0 && owned >= p.Workspaces {
		return &WorkspaceQuotaError{Plan: p.Name, Limit: p.Workspaces}
	}
	return s.append(kindWorkspace, encodeWorkspace(false, tenantID, ws))
}

func (s *Store) owns(tenantID, ws string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.st.workspaces[tenantID][ws]
	return ok
}

// ReleaseWorkspace gives up the tenant's ownership of ws, after its erasure,
// so that it no longer counts against the plan. Not owning it is a no-op.
func (s *Store) ReleaseWorkspace(tenantID, ws string) error {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	if !s.owns(tenantID, ws) {
		return nil
	}
	return s.append(kindWorkspace, encodeWorkspace(true, tenantID, ws))
}

// Workspaces lists the workspaces a tenant owns, sorted.
func (s *Store) Workspaces(tenantID string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.st.workspaces[tenantID]))
	for ws := range s.st.workspaces[tenantID] {
		out = append(out, ws)
	}
	slices.Sort(out)
	return out
}
