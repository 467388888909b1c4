package httpd

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// shapeTurns is a short conversation in which both speakers say something
// about painting, so that a question naming one of them is decided by who
// said what.
var shapeTurns = []struct{ speaker, role, text string }{
	{"Caroline", "user", "I painted a sunrise over the lake last week."},
	{"Melanie", "assistant", "I painted portraits of my kids, they loved them!"},
	{"Caroline", "user", "The support group meeting helped me a lot."},
	{"Melanie", "assistant", "We go camping with the family next month."},
	{"Caroline", "user", "Painting calms me down after a long day."},
}

// ingestShape sends shapeTurns to workspace ws in a client shape: role
// (the speaker's name as role), prefix (role user/assistant, "Name: " in
// the content) or actor (role user/assistant, the speaker as actor_id: one
// v2 batch per turn), as `loci eval locomo --shape` does.
func ingestShape(t *testing.T, h *harness, ws, shape string) {
	t.Helper()
	for i, tn := range shapeTurns {
		role, content, actor := tn.role, tn.text, "locomo"
		switch shape {
		case "role":
			role = tn.speaker
		case "prefix":
			content = tn.speaker + ": " + tn.text
		case "actor":
			actor = tn.speaker
		}
		h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": ws, "actor_id": actor, "artifacts": []map[string]any{{
			"artifact_type": "chat_turn", "raw_payload": map[string]any{"role": role, "content": content},
			"session_id": "s1", "timestamp": fmt.Sprintf("2024-05-01T10:00:%02dZ", i), "idempotency_key": fmt.Sprint(i),
		}}}).must(t, 201)
	}
}

// TestChatShapesAttributeAlike: the same conversation sent in the three
// client shapes gives the same pack for a question naming a speaker: the
// same texts cited in the same order (each turn reads "<Name>: ..."),
// the same confidence and abstention, and the named speaker's turns first.
func TestChatShapesAttributeAlike(t *testing.T) {
	h := newHarness(t, Config{})
	type outcome struct {
		cited      []string
		confidence float64
		abstain    bool
		context    string
	}
	packOf := func(ws, query string) outcome {
		p := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": ws, "query": query, "max_tokens": 60}).must(t, 200)
		var o outcome
		for _, c := range p["citations"].([]any) {
			o.cited = append(o.cited, str(c.(map[string]any), "content_preview"))
		}
		o.confidence, o.abstain, o.context = p["confidence"].(float64), p["abstain_flag"].(bool), str(p, "context_text")
		return o
	}
	shapes := []string{"role", "prefix", "actor"}
	for _, s := range append(shapes, "none") {
		ingestShape(t, h, s, s)
	}
	for _, c := range []struct{ q, name string }{
		{"What did Caroline paint?", "Caroline"}, {"What did Melanie paint?", "Melanie"}, {"Who helped Caroline?", "Caroline"},
	} {
		q, name := c.q, c.name
		want := packOf("role", q)
		if len(want.cited) == 0 {
			t.Fatalf("%q: nothing cited in shape role", q)
		}
		if !strings.HasPrefix(want.cited[0], name+": ") {
			t.Errorf("%q: first citation %q is not %s's", q, want.cited[0], name)
		}
		for _, s := range shapes[1:] {
			got := packOf(s, q)
			if !slices.Equal(got.cited, want.cited) || got.confidence != want.confidence || got.abstain != want.abstain ||
				got.context != want.context {
				t.Errorf("%q in shape %s: %+v\nwant (shape role) %+v", q, s, got, want)
			}
		}
		// Without names the turns keep their roles and no speaker is known.
		for _, c := range packOf("none", q).cited {
			if !strings.HasPrefix(c, "user: ") && !strings.HasPrefix(c, "assistant: ") {
				t.Errorf("%q in shape none: citation %q", q, c)
			}
		}
	}
}

// TestUnnamedTurnsAttributedByAddress: turns sent as user and assistant
// with no names but those the two address each other by. A question about
// one of them whose evidence is the other's words abstains, as it does in
// the named shapes; the question about the one who said them does not, and
// cites that person's turn first. Without the vocatives neither abstains.
func TestUnnamedTurnsAttributedByAddress(t *testing.T) {
	h := newHarness(t, Config{})
	turns := []struct{ role, text, plain string }{
		{"assistant", "Hey Caroline! I ran a charity race for mental health last Saturday.", "I ran a charity race for mental health last Saturday."},
		{"user", "Wow, Melanie, a charity race? I went to the support group yesterday.", "Wow, a charity race? I went to the support group yesterday."},
		{"assistant", "Thanks, Caroline! After the race I realize self-care is really important.", "After the race I realize self-care is really important."},
		{"user", "That sounds great, Mel! I painted a sunrise over the lake.", "That sounds great! I painted a sunrise over the lake."},
		{"assistant", "It was tough, Caroline, but I realize how much I love running.", "It was tough but I realize how much I love running."},
		{"user", "Thanks, Melanie. I am proud of you.", "I am proud of you."},
	}
	for _, ws := range []string{"vocatives", "plain"} {
		var items []map[string]any
		for i, tn := range turns {
			content := tn.text
			if ws == "plain" {
				content = tn.plain
			}
			items = append(items, map[string]any{"artifact_type": "chat_turn", "raw_payload": map[string]any{"role": tn.role, "content": content},
				"session_id": "s1", "timestamp": fmt.Sprintf("2024-05-01T10:00:%02dZ", i), "idempotency_key": fmt.Sprint(i)})
		}
		h.do("POST", "/v2/ingest", "", map[string]any{"workspace_id": ws, "actor_id": "locomo", "artifacts": items}).must(t, 201)
	}
	for _, tt := range []struct {
		ws, query string
		abstain   bool
		first     string
	}{
		{"vocatives", "What did Caroline realize after her charity race?", true, ""},
		{"vocatives", "What did Melanie realize after her charity race?", false, "assistant: "},
		{"plain", "What did Caroline realize after her charity race?", false, ""},
	} {
		p := h.do("POST", "/v1/context-pack", "", map[string]any{"workspace_id": tt.ws, "query": tt.query, "max_tokens": 400}).must(t, 200)
		cites := p["citations"].([]any)
		if p["abstain_flag"].(bool) != tt.abstain || len(cites) == 0 {
			t.Errorf("%s: %q: abstain %v (confidence %v, %d citations), want %v", tt.ws, tt.query, p["abstain_flag"], p["confidence"], len(cites), tt.abstain)
			continue
		}
		if first := str(cites[0].(map[string]any), "content_preview"); !strings.HasPrefix(first, tt.first) {
			t.Errorf("%s: %q: first citation %q, want %q...", tt.ws, tt.query, first, tt.first)
		}
	}
}
