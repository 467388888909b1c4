package httpd

import (
	"encoding/json"
	"testing"

	"github.com/loci-memory/loci/service"
)

// TestListTenants: GET /v1/tenants lists, for the admin key only, the
// built-in tenant first, then the registered ones by id, each with its own
// workspaces (the same workspace id under two tenants stays apart); a
// tenant's key is refused 403, a query parameter 400.
func TestListTenants(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	idA, a := register(t, h, "a@example.com", "pro")
	idB, b := register(t, h, "b@example.com", "free")
	ingest := func(key, ws string) {
		h.do("POST", "/v1/ingest", key, map[string]any{"workspace_id": ws, "actor_id": "x", "artifact_type": "note",
			"raw_payload": map[string]any{"content": "a note in " + ws}}).must(t, 201)
	}
	ingest(a, "shared")
	ingest(a, "alpha")
	ingest(b, "shared")
	ingest(adminKey, "ops")

	var got struct {
		Tenants []struct {
			TenantID   string  `json:"tenant_id"`
			Email      *string `json:"email"`
			Plan       string  `json:"plan"`
			Workspaces []struct {
				WorkspaceID   string `json:"workspace_id"`
				ArtifactCount int    `json:"artifact_count"`
			} `json:"workspaces"`
		} `json:"tenants"`
	}
	r := h.do("GET", "/v1/tenants", adminKey, nil)
	if r.status != 200 {
		t.Fatalf("admin: %d %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	type row struct {
		id, email, plan, ws string
	}
	var rows []row
	for _, tn := range got.Tenants {
		email := "<nil>"
		if tn.Email != nil {
			email = *tn.Email
		}
		ws := ""
		for _, w := range tn.Workspaces {
			ws += w.WorkspaceID + " "
			if w.ArtifactCount != 1 {
				t.Errorf("%s/%s: %d artifacts, want 1", tn.TenantID, w.WorkspaceID, w.ArtifactCount)
			}
		}
		rows = append(rows, row{tn.TenantID, email, tn.Plan, ws})
	}
	want := []row{{DefaultTenant, "<nil>", "enterprise", "ops "}, {idA, "a@example.com", "pro", "alpha shared "}, {idB, "b@example.com", "free", "shared "}}
	if idB < idA {
		want[1], want[2] = want[2], want[1]
	}
	if len(rows) != len(want) {
		t.Fatalf("tenants %+v, want %+v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("tenant %d: %+v, want %+v", i, rows[i], want[i])
		}
	}
	h.do("GET", "/v1/tenants", a, nil).fails(t, 403, "admin key")
	h.do("GET", "/v1/tenants", "", nil).fails(t, 401, "")
	h.do("GET", "/v1/tenants?plan=pro", adminKey, nil).fails(t, 400, "plan")
}
