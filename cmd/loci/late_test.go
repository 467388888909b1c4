package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-memory/loci/internal/proctest"
)

// TestServeLateInteractionDefault: a server started as the README starts
// it runs late interaction in a v1 pack of a small workspace;
// --late-max-spans below the workspace's size turns it off there, and
// --late-interaction none everywhere; bad settings are refused naming
// their variable. (Which spans get stored rows: engine's
// TestTokenRowsWorkspaceLimit.)
func TestServeLateInteractionDefault(t *testing.T) {
	bin := proctest.Loci(t)
	for _, tc := range []struct{ env, value string }{
		{"LOCI_LATE_MAX_SPANS", "-1"},
		{"LOCI_LATE_MAX_SPANS", "ten"},
		{"LOCI_LATE_DEPTH", "101"},
	} {
		expectRefusal(t, bin, tc.env, tc.value)
	}
	for _, c := range []struct {
		name string
		args []string
		late bool // whether a v1 pack that leaves late_depth out runs it
	}{
		{"default", nil, true},
		{"limit below the workspace", []string{"--late-max-spans", "2"}, false},
		{"none", []string{"--late-interaction", "none"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			p := startServeWith(t, bin, data, serveOptions{args: c.args})
			defer p.stop(t)
			post := func(path, body string, into any) {
				t.Helper()
				resp, err := http.Post("http://"+p.addr+path, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					t.Fatalf("%s: %d", path, resp.StatusCode)
				}
				if into != nil {
					json.NewDecoder(resp.Body).Decode(into)
				}
			}
			for _, turn := range []string{"Caroline: I ran a charity race last Sunday.", "Melanie: We adopted a dog named Biscuit.", "Caroline: I am studying counseling."} {
				post("/v1/ingest", fmt.Sprintf(`{"workspace_id":"ws","actor_id":"a","artifact_type":"chat_turn","raw_payload":{"role":"user","content":%q}}`, turn), nil)
			}
			var pk struct {
				ReceiptID string `json:"receipt_id"`
			}
			post("/v1/context-pack", `{"workspace_id":"ws","query":"What did Caroline run?","max_tokens":256}`, &pk)
			resp, err := http.Get("http://" + p.addr + "/v1/receipts/" + pk.ReceiptID)
			if err != nil {
				t.Fatal(err)
			}
			var res struct{ Assumptions []string }
			json.NewDecoder(resp.Body).Decode(&res)
			resp.Body.Close()
			ran := false
			for _, a := range res.Assumptions {
				ran = ran || strings.Contains(a, "by late interaction with answerai-colbert-small-v1")
			}
			if ran != c.late {
				t.Errorf("late interaction ran: %v, want %v (assumptions %q)", ran, c.late, res.Assumptions)
			}
		})
	}
}
