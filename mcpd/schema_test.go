package mcpd_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/loci-memory/loci/mcpd"
	"github.com/loci-memory/loci/retrieval"
	"github.com/loci-memory/loci/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSchemaBounds: every bound a tool's input schema states (minimum and
// maximum of a number, minItems and maxItems of an array) is accepted by the
// server at the bound and refused just past it, every parameter at every
// depth has a description, and no parameter is typed null. The bounds are
// read from the schemas the server lists, so a bound added later is checked
// too; the table of wanted bounds makes sure the known ones are there with
// the service's numbers.
func TestSchemaBounds(t *testing.T) {
	svc := newService(t, service.Config{})
	p, _ := svc.Authenticate(service.Credentials{})
	cs := connect(t, mcpd.New(svc, mcpd.Options{Principal: &p}))
	call(t, cs, "remember", map[string]any{"workspace_id": "w", "memories": []map[string]any{{"content": "the deploy is on Friday"}}}, nil)

	// base holds valid arguments of each tool with a bounded parameter.
	base := map[string]func() map[string]any{
		"remember": func() map[string]any {
			return map[string]any{"workspace_id": "w", "memories": []map[string]any{{"content": "x"}}}
		},
		"recall": func() map[string]any { return map[string]any{"workspace_id": "w", "query": "when is the deploy"} },
		"list":   func() map[string]any { return map[string]any{"workspace_id": "w"} },
	}
	want := map[string][2]int{ // tool.parameter: its bounds
		"remember.memories": {1, mcpd.MaxRememberItems},
		"recall.max_tokens": {1, retrieval.MaxPackTokens},
		"list.limit":        {1, service.MaxListLimit},
	}

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for _, tool := range tools.Tools {
		var sch jsonschema.Schema
		if err := remarshal(tool.InputSchema, &sch); err != nil {
			t.Fatal(err)
		}
		describedAndTyped(t, tool.Name, &sch)
		for _, name := range slices.Sorted(maps.Keys(sch.Properties)) {
			prop := sch.Properties[name]
			lo, hi, ok := bounds(prop)
			if !ok {
				continue
			}
			key := tool.Name + "." + name
			got[key] = [2]int{lo, hi}
			mk := base[tool.Name]
			if mk == nil {
				t.Errorf("%s is bounded but the test has no valid arguments for %s", key, tool.Name)
				continue
			}
			for _, c := range []struct {
				n  int
				ok bool
			}{{lo, true}, {lo - 1, false}, {hi, true}, {hi + 1, false}} {
				args := mk()
				args[name] = value(prop, c.n)
				msg := call(t, cs, tool.Name, args, nil)
				if refused := strings.HasPrefix(msg, "ERROR: "); refused == c.ok {
					t.Errorf("%s = %d: refused %v, want %v (%.200s)", key, c.n, refused, !c.ok, msg)
				}
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("bounds %v, want %v", got, want)
	}
}

// bounds returns a property's numeric or item-count bounds.
func bounds(s *jsonschema.Schema) (lo, hi int, ok bool) {
	switch {
	case s.Minimum != nil || s.Maximum != nil:
		if s.Minimum == nil || s.Maximum == nil {
			return 0, 0, false
		}
		return int(*s.Minimum), int(*s.Maximum), true
	case s.MinItems != nil || s.MaxItems != nil:
		if s.MinItems == nil || s.MaxItems == nil {
			return 0, 0, false
		}
		return *s.MinItems, *s.MaxItems, true
	}
	return 0, 0, false
}

// value is n for a number, or an array of n memories.
func value(s *jsonschema.Schema, n int) any {
	if s.Type != "array" {
		return n
	}
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"content": fmt.Sprintf("memory %d", i)}
	}
	return out
}

// describedAndTyped checks that every property under s has a description
// and is not typed null.
func describedAndTyped(t *testing.T, path string, s *jsonschema.Schema) {
	t.Helper()
	for name, p := range s.Properties {
		at := path + "." + name
		if strings.TrimSpace(p.Description) == "" {
			t.Errorf("%s has no description", at)
		}
		if p.Type == "null" || slices.Contains(p.Types, "null") {
			t.Errorf("%s is typed %q %v: a parameter is left out, never null", at, p.Type, p.Types)
		}
		describedAndTyped(t, at, p)
		if p.Items != nil {
			describedAndTyped(t, at+"[]", p.Items)
		}
	}
}

// remarshal decodes v's JSON into out.
func remarshal(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// TestStructuredResults: explain and list answer with structured content
// (an object) as the other tools do, and the same JSON as text.
func TestStructuredResults(t *testing.T) {
	svc := newService(t, service.Config{})
	p, _ := svc.Authenticate(service.Credentials{})
	cs := connect(t, mcpd.New(svc, mcpd.Options{Principal: &p}))
	call(t, cs, "remember", map[string]any{"workspace_id": "w", "memories": []map[string]any{{"content": "the deploy is on Friday"}}}, nil)
	var rec mcpd.RecallOutput
	call(t, cs, "recall", map[string]any{"workspace_id": "w", "query": "when is the deploy"}, &rec)
	for _, c := range []struct {
		tool string
		args map[string]any
		key  string // a field the object must hold
	}{
		{"explain", map[string]any{"receipt_id": rec.ReceiptID}, "evidence"},
		{"list", map[string]any{}, "workspaces"},
		{"list", map[string]any{"workspace_id": "w"}, "artifacts"},
	} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", c.tool, err, res)
		}
		obj, ok := res.StructuredContent.(map[string]any)
		if !ok || obj[c.key] == nil {
			t.Errorf("%s %v: structured content %T %v, want an object with %q", c.tool, c.args, res.StructuredContent, res.StructuredContent, c.key)
			continue
		}
		var text map[string]any
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &text); err != nil || !reflect.DeepEqual(text, obj) {
			t.Errorf("%s: text %v is not the structured content (%v)", c.tool, text, err)
		}
	}
}
