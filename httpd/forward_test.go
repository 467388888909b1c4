package httpd

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/loci-memory/loci/service"
)

// TestSingleNodeIgnoresClusterHeaders: a single node has no cluster to
// forward to; the cluster's internal headers change nothing there (in a
// cluster, a forged mark is refused: cluster's partial_test.go).
func TestSingleNodeIgnoresClusterHeaders(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	h.do("POST", "/v1/ingest", adminKey, `{"workspace_id":"w1","actor_id":"a","artifact_type":"note","raw_payload":{"text":"hello"}}`).must(t, http.StatusCreated)
	plain := h.do("GET", "/v1/workspaces", adminKey, nil)
	req, err := http.NewRequest("GET", h.base+"/v1/workspaces", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", adminKey)
	req.Header.Set(forwardHeader, "anything")
	req.Header.Set(shardsHeader, "7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != plain.status || !bytes.Equal(body, plain.body) {
		t.Fatalf("with cluster headers: %d %s; without: %d %s", resp.StatusCode, body, plain.status, plain.body)
	}
}
