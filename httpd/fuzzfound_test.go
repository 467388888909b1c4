package httpd

import (
	"testing"

	"github.com/loci-memory/loci/service"
)

// TestSetPlanOfBuiltinTenant: the admin key naming the built-in tenant in
// PUT /v1/billing/plan is bad input (its plan is fixed), not a 500 (found by
// schemathesis, .ci/schemathesis.sh).
func TestSetPlanOfBuiltinTenant(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	h.do("PUT", "/v1/billing/plan", adminKey, map[string]any{"tenant_id": DefaultTenant, "plan": "pro"}).fails(t, 400, "built-in tenant")
	if p := h.do("GET", "/v1/billing/plan", adminKey, nil).must(t, 200); str(p, "plan") != "enterprise" {
		t.Errorf("the built-in tenant's plan changed: %v", p)
	}
}
