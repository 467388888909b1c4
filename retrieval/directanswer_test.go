package retrieval_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/embed/minilm"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/httpd"
	"github.com/loci-memory/loci/internal/enginetest"
	"github.com/loci-memory/loci/service"
)

// directRunbook answers "How do I rotate the database credentials?".
const directRunbook = "Runbook: rotate the database credentials. 1. Create a new password for the app_rw role in Vault: " +
	"vault write database/rotate-role/app_rw. 2. Update the secret in the deploy config and roll the API pods with " +
	"kubectl rollout restart deploy/api. 3. Check that new connections succeed, then revoke the old password with " +
	"ALTER ROLE app_rw PASSWORD on the primary. 4. Watch the error rate for 15 minutes and page the DBA on-call if " +
	"login failures appear."

// looseNotes returns 40 short notes that share the query's vocabulary and
// topic, each holding two of its three terms, and none answering it: where
// credentials of databases are kept, how often other credentials are
// rotated, when database on-call rotations start.
func looseNotes() []string {
	systems := strings.Fields("billing search analytics inventory payments reporting orders auth catalog shipping metrics ledger profile audit")
	places := []string{"Vault", "the password manager", "a sealed envelope", "the team safe", "1Password", "the secrets bucket",
		"AWS Secrets Manager", "the ops wiki", "a KMS-encrypted file", "the CI variables", "the vault at HQ", "Bitwarden",
		"the config repo", "the old wiki"}
	things := []string{"Kafka", "Redis", "SMTP", "LDAP", "S3", "Jenkins", "Grafana", "Slack bot", "VPN", "GitHub", "Stripe",
		"Twilio", "Sentry", "Datadog"}
	teams := strings.Fields("DBA platform storage SRE data core infra backend payments search growth mobile web ML")
	days := strings.Fields("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
	var notes []string
	for i := range systems {
		notes = append(notes,
			fmt.Sprintf("The %s database credentials are kept in %s.", systems[i], places[i]),
			fmt.Sprintf("We rotate the %s credentials every %d days.", things[i], 30+5*i),
			fmt.Sprintf("The %s database on-call rotation starts on %s.", teams[i], days[i%len(days)]))
	}
	return notes[:40]
}

// TestDirectAnswerOutranksLooseMatches (issue 21, item 10): with the
// default encoder, over HTTP, two identical runbooks that answer the
// question and 40 short notes that share its words without answering it
// (each holds two of its three terms, and the encoder finds several of
// them closer to the question than the runbook). The runbook is the first
// evidence, its copy is excluded as REDUNDANCY, and neither is cut for
// BUDGET. Before the lexical channel's score counted the query's term
// pairs a span holds side by side (pack.AdjacencyBonus), the notes' higher
// BM25 (short spans) and cosines ranked the runbook seventh (0.899 against
// 0.982 for the best note), and at this budget both copies were cut for
// BUDGET.
func TestDirectAnswerOutranksLooseMatches(t *testing.T) {
	enc, err := minilm.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctl := control.New(time.Now)
	quiet := enginetest.Quiet()
	db := enginetest.OpenControlled(t, t.TempDir(), engine.Options{Logger: quiet, Embedder: enc, EmbedInBackground: true}, ctl)
	defer db.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpd.New(service.New(db, ctl, service.Config{Logger: quiet}), httpd.Config{Version: "test", Logger: quiet})
	go srv.Serve(ln)
	defer srv.Shutdown()
	base := "http://" + ln.Addr().String()
	post := func(path string, body, out any) {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, raw)
		}
	}

	type item struct {
		Type    string            `json:"artifact_type"`
		Payload map[string]string `json:"raw_payload"`
	}
	items := []item{{"document", map[string]string{"content": directRunbook}}, {"document", map[string]string{"content": directRunbook}}}
	for _, n := range looseNotes() {
		items = append(items, item{"note", map[string]string{"content": n}})
	}
	var ingested struct {
		Ingested []struct {
			ArtifactID string `json:"artifact_id"`
			Embedding  string `json:"embedding"`
		} `json:"ingested"`
	}
	post("/v2/ingest", map[string]any{"workspace_id": "ops", "actor_id": "me", "artifacts": items, "wait_for_embedding": true}, &ingested)
	// wait_for_embedding waits at most 20 s; on a loaded machine the
	// encoder may need longer, so poll each artifact's status until it is
	// embedded (waiting for a state, not timing anything).
	deadline := time.Now().Add(5 * time.Minute)
	for i, it := range ingested.Ingested {
		for state := it.Embedding; state != "embedded"; {
			if state != "pending" || time.Now().After(deadline) {
				t.Fatalf("item %d: embedding %q", i, state)
			}
			time.Sleep(100 * time.Millisecond)
			resp, err := http.Get(base + "/v1/artifacts/" + it.ArtifactID + "/status")
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				Embedding string `json:"embedding"`
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			state = st.Embedding
		}
	}
	runbooks := map[string]bool{ingested.Ingested[0].ArtifactID: true, ingested.Ingested[1].ArtifactID: true}

	var packed struct {
		ReceiptID string `json:"receipt_id"`
		Citations []struct {
			Index      int     `json:"index"`
			ArtifactID string  `json:"artifact_id"`
			Relevance  float64 `json:"relevance_score"`
		} `json:"citations"`
	}
	post("/v1/context-pack", map[string]any{"workspace_id": "ops", "query": "How do I rotate the database credentials?", "max_tokens": 200}, &packed)
	resp, err := http.Get(base + "/v1/receipts/" + packed.ReceiptID)
	if err != nil {
		t.Fatal(err)
	}
	var receipt struct {
		Exclusions []struct {
			ArtifactID string  `json:"artifact_id"`
			Reason     string  `json:"reason"`
			Relevance  float64 `json:"relevance_score"`
		} `json:"exclusions"`
	}
	err = json.NewDecoder(resp.Body).Decode(&receipt)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}

	if len(packed.Citations) == 0 || !runbooks[packed.Citations[0].ArtifactID] {
		t.Errorf("the runbook is not the first evidence: %+v", packed.Citations)
	}
	cited := 0
	for _, c := range packed.Citations {
		if runbooks[c.ArtifactID] {
			cited++
		}
	}
	var reasons []string
	for _, x := range receipt.Exclusions {
		if runbooks[x.ArtifactID] {
			reasons = append(reasons, x.Reason)
		}
	}
	if cited != 1 || len(reasons) != 1 || reasons[0] != "REDUNDANCY" {
		t.Errorf("runbooks: %d cited, excluded for %v; want 1 cited and its copy excluded for REDUNDANCY", cited, reasons)
	}
}
