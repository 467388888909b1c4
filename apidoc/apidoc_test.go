package apidoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/loci-memory/loci"
	"github.com/loci-memory/loci/apidoc/internal/yamljson"
)

// yamlPath is the document as written, relative to this package.
const yamlPath = "../docs/openapi.yaml"

// TestGeneratedUpToDate fails while docs/openapi.json is not what the
// generator makes of docs/openapi.yaml: run go generate ./apidoc.
func TestGeneratedUpToDate(t *testing.T) {
	src, err := os.ReadFile(yamlPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := yamljson.ConvertIndented(src)
	if err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	if !bytes.Equal(loci.OpenAPIJSON, want) {
		t.Fatal("docs/openapi.json is out of date with docs/openapi.yaml: run go generate ./apidoc")
	}
	// What is served is the converter's compact output, byte for byte.
	compact, _ := yamljson.Convert(src)
	if got, err := JSON(); err != nil || !bytes.Equal(got, compact) {
		t.Fatalf("JSON() differs from the conversion of docs/openapi.yaml (%v)", err)
	}
}

// Map is a JSON object that keeps its keys in document order.
type Map struct {
	keys []string
	vals map[string]any
}

// Keys returns the keys in document order.
func (m *Map) Keys() []string { return slices.Clone(m.keys) }

// Get returns the value of key k and whether it is present.
func (m *Map) Get(k string) (any, bool) {
	v, ok := m.vals[k]
	return v, ok
}

// decodeOrdered reads one JSON value: objects as *Map, arrays as []any,
// numbers as json.Number.
func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		m := &Map{vals: map[string]any{}}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			if _, dup := m.vals[k.(string)]; dup {
				return nil, fmt.Errorf("duplicate key %q", k)
			}
			m.keys = append(m.keys, k.(string))
			m.vals[k.(string)] = v
		}
		_, err = dec.Token()
		return m, err
	case json.Delim('['):
		s := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		_, err = dec.Token()
		return s, err
	}
	return tok, nil
}

// document decodes the served reference.
func document(t *testing.T) *Map {
	t.Helper()
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		t.Fatalf("/openapi.json: %v", err)
	}
	m, ok := v.(*Map)
	if !ok {
		t.Fatalf("/openapi.json is a %T, not an object", v)
	}
	return m
}

// get follows a path of mapping keys.
func get(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(*Map)
		if !ok {
			t.Fatalf("%s: not a mapping", k)
		}
		if v, ok = m.Get(k); !ok {
			t.Fatalf("missing %s", k)
		}
	}
	return v
}

// operations calls f for every operation of the document.
func operations(t *testing.T, d *Map, f func(method, path string, op *Map)) {
	t.Helper()
	paths := get(t, d, "paths").(*Map)
	for _, path := range paths.Keys() {
		item := get(t, paths, path).(*Map)
		for _, k := range item.Keys() {
			if slices.Contains(methods, k) {
				f(strings.ToUpper(k), path, get(t, item, k).(*Map))
			}
		}
	}
}

// walk calls f for every value of the tree with its JSON pointer.
func walk(ptr string, v any, f func(ptr string, v any)) {
	f(ptr, v)
	switch v := v.(type) {
	case *Map:
		for _, k := range v.keys {
			walk(ptr+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), v.vals[k], f)
		}
	case []any:
		for i, e := range v {
			walk(fmt.Sprintf("%s/%d", ptr, i), e, f)
		}
	}
}

func TestDocumentParses(t *testing.T) {
	d := document(t)
	if got := get(t, d, "openapi"); got != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", got)
	}
	for _, k := range []string{"info", "paths", "components"} {
		get(t, d, k)
	}
	scheme := get(t, d, "components", "securitySchemes", "ApiKeyAuth")
	if get(t, scheme, "type") != "apiKey" || get(t, scheme, "in") != "header" || get(t, scheme, "name") != "X-API-Key" {
		t.Error("ApiKeyAuth is not an apiKey in header X-API-Key")
	}
}

// The routes the service serves; the HTTP server's route table is checked
// against Routes() by the server's own tests.
var wantRoutes = []string{
	"GET /health",
	"POST /mcp",
	"GET /openapi.json",
	"POST /v1/register",
	"POST /v1/keys",
	"GET /v1/keys",
	"DELETE /v1/keys/{key_id}",
	"POST /v1/ingest",
	"GET /v1/artifacts/{artifact_id}",
	"DELETE /v1/artifacts/{artifact_id}",
	"GET /v1/artifacts/{artifact_id}/status",
	"POST /v1/context-pack",
	"POST /v1/feedback",
	"GET /v1/receipts",
	"GET /v1/receipts/{receipt_id}",
	"GET /v1/workspaces",
	"DELETE /v1/workspaces/{workspace_id}",
	"GET /v1/workspaces/{workspace_id}/artifacts",
	"GET /v1/workspaces/{workspace_id}/settings",
	"PUT /v1/workspaces/{workspace_id}/settings",
	"GET /v1/billing/plans",
	"GET /v1/billing/plan",
	"PUT /v1/billing/plan",
	"GET /v1/billing/usage",
	"GET /v1/tenants",
	"POST /v2/ingest",
	"POST /v2/context-pack",
	"GET /v2/jobs/{job_id}",
}

func TestRoutes(t *testing.T) {
	routes, err := Routes()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range routes {
		got = append(got, r.String())
	}
	want := slices.Clone(wantRoutes)
	slices.SortFunc(want, func(a, b string) int {
		ma, pa, _ := strings.Cut(a, " ")
		mb, pb, _ := strings.Cut(b, " ")
		return strings.Compare(pa+" "+ma, pb+" "+mb)
	})
	if !slices.Equal(got, want) {
		t.Errorf("Routes() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	routes[0].Path = "changed"
	if again, _ := Routes(); again[0].Path == "changed" {
		t.Error("Routes returns its cached slice")
	}
}

func TestEveryPathHasAnOperation(t *testing.T) {
	d := document(t)
	paths := get(t, d, "paths").(*Map)
	for _, path := range paths.Keys() {
		item := get(t, paths, path).(*Map)
		if !slices.ContainsFunc(item.Keys(), func(k string) bool { return slices.Contains(methods, k) }) {
			t.Errorf("path %s has no operation", path)
		}
		for _, k := range item.Keys() {
			if !slices.Contains(methods, k) && !slices.Contains([]string{"parameters", "summary", "description", "servers"}, k) {
				t.Errorf("path %s: unknown key %s", path, k)
			}
		}
	}
}

func TestOperations(t *testing.T) {
	d := document(t)
	ids := map[string]string{}
	operations(t, d, func(method, path string, op *Map) {
		where := method + " " + path
		id, _ := get(t, op, "operationId").(string)
		if id == "" {
			t.Errorf("%s: no operationId", where)
		} else if other, dup := ids[id]; dup {
			t.Errorf("%s: operationId %s also used by %s", where, id, other)
		}
		ids[id] = where
		responses := get(t, op, "responses").(*Map)
		if !slices.ContainsFunc(responses.Keys(), func(c string) bool { return c[0] == '2' }) {
			t.Errorf("%s: no success response", where)
		}
		for _, code := range responses.Keys() {
			resp := get(t, responses, code).(*Map)
			if ref, ok := resp.Get("$ref"); ok {
				resp = resolveRef(t, d, ref.(string)).(*Map)
			}
			if _, ok := resp.Get("description"); !ok {
				t.Errorf("%s %s: no description", where, code)
			}
			// Errors are {"detail"}; /health's 503 is its own status body.
			if code >= "400" && where+" "+code != "GET /health 503" {
				schema := get(t, resp, "content", "application/json", "schema", "$ref")
				if schema != "#/components/schemas/Error" {
					t.Errorf("%s %s: error schema %v, want Error", where, code, schema)
				}
			}
			if code == "429" {
				get(t, resp, "headers", "Retry-After")
			}
		}
		// Path parameters are declared for every {name} of the path.
		for _, seg := range strings.Split(path, "/") {
			if strings.HasPrefix(seg, "{") {
				name := strings.Trim(seg, "{}")
				if !hasPathParam(t, d, path, name) {
					t.Errorf("%s: path parameter %s is not declared", where, name)
				}
			}
		}
	})
}

func hasPathParam(t *testing.T, d *Map, path, name string) bool {
	params, _ := get(t, d, "paths", path).(*Map).Get("parameters")
	list, _ := params.([]any)
	for _, p := range list {
		pm := p.(*Map)
		if ref, ok := pm.Get("$ref"); ok {
			pm = resolveRef(t, d, ref.(string)).(*Map)
		}
		if get(t, pm, "in") == "path" && get(t, pm, "name") == name && get(t, pm, "required") == true {
			return true
		}
	}
	return false
}

// resolveRef follows a local reference ("#/a/b").
func resolveRef(t *testing.T, d *Map, ref string) any {
	t.Helper()
	ptr, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		t.Fatalf("$ref %s is not local", ref)
	}
	var v any = d
	for _, k := range strings.Split(ptr, "/") {
		k = strings.NewReplacer("~1", "/", "~0", "~").Replace(k)
		m, ok := v.(*Map)
		if !ok {
			t.Fatalf("$ref %s: %s is not inside a mapping", ref, k)
		}
		if v, ok = m.Get(k); !ok {
			t.Fatalf("$ref %s does not resolve (no %s)", ref, k)
		}
	}
	return v
}

func TestRefsResolve(t *testing.T) {
	d := document(t)
	n := 0
	walk("", d, func(ptr string, v any) {
		if !strings.HasSuffix(ptr, "/$ref") {
			return
		}
		n++
		ref, ok := v.(string)
		if !ok || !strings.HasPrefix(ref, "#/components/") || strings.Count(ref, "/") != 3 {
			t.Errorf("%s: $ref %v does not name a component", ptr, v)
			return
		}
		resolveRef(t, d, ref)
	})
	if n == 0 {
		t.Fatal("no $ref found")
	}
}

// Every schema type is a JSON Schema type name or a list of them; an unquoted
// null in [string, null] would be a YAML null here.
func TestSchemaTypes(t *testing.T) {
	d := document(t)
	valid := []string{"string", "integer", "number", "boolean", "object", "array", "null"}
	walk("", d, func(ptr string, v any) {
		if !strings.HasSuffix(ptr, "/type") || strings.Contains(ptr, "/securitySchemes/") {
			return
		}
		if s, ok := v.(string); ok && slices.Contains(valid, s) {
			return
		}
		if list, ok := v.([]any); ok && len(list) > 0 && !slices.ContainsFunc(list, func(e any) bool {
			s, ok := e.(string)
			return !ok || !slices.Contains(valid, s)
		}) {
			return
		}
		t.Errorf("%s: bad type %#v", ptr, v)
	})
}

func TestJSON(t *testing.T) {
	a, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(a) {
		t.Fatal("JSON() is not valid JSON")
	}
	b, _ := JSON()
	if !bytes.Equal(a, b) {
		t.Fatal("JSON() differs between calls")
	}
	a[0] = 'x'
	if c, _ := JSON(); c[0] != '{' {
		t.Fatal("JSON() returns its cached slice")
	}
	// Deterministic from scratch, not only cached.
	for range 3 {
		c, _, err := convert(loci.OpenAPIJSON)
		if err != nil || !bytes.Equal(b, c) {
			t.Fatal("converting the document again gives other bytes")
		}
	}
	if !bytes.HasPrefix(b, []byte(`{"openapi":"3.1.0","info":{`)) {
		t.Errorf("JSON() starts %.40s", b)
	}
	var compact bytes.Buffer
	if json.Compact(&compact, b) != nil || !bytes.Equal(compact.Bytes(), b) {
		t.Error("JSON() is not compact")
	}

	// Keys come in document order at every level: compare the object keys of
	// the JSON, in stream order, with a walk of the YAML document's nodes.
	src, err := os.ReadFile(yamlPath)
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Load(src, &root); err != nil {
		t.Fatal(err)
	}
	var want []string
	yamlKeys(&root, &want)
	var got []string
	if err := objectKeys(json.NewDecoder(bytes.NewReader(b)), &got); err != nil {
		t.Fatal(err)
	}
	if len(want) < 100 {
		t.Fatalf("only %d mappings in docs/openapi.yaml", len(want))
	}
	if !slices.Equal(got, want) {
		t.Error("JSON object keys are not in document order")
	}
}

// yamlKeys appends the keys of each mapping under n, in pre-order, as
// comma-joined lists.
func yamlKeys(n *yaml.Node, out *[]string) {
	switch n.Kind {
	case yaml.AliasNode:
		yamlKeys(n.Alias, out)
	case yaml.MappingNode:
		var keys []string
		for i := 0; i < len(n.Content); i += 2 {
			keys = append(keys, n.Content[i].Value)
		}
		*out = append(*out, strings.Join(keys, ","))
		for i := 1; i < len(n.Content); i += 2 {
			yamlKeys(n.Content[i], out)
		}
	default:
		for _, c := range n.Content {
			yamlKeys(c, out)
		}
	}
}

// objectKeys reads one JSON value and appends the keys of each object in it,
// in pre-order, as comma-joined lists.
func objectKeys(dec *json.Decoder, out *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		i := len(*out)
		*out = append(*out, "")
		var keys []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			keys = append(keys, k.(string))
			if err := objectKeys(dec, out); err != nil {
				return err
			}
		}
		(*out)[i] = strings.Join(keys, ",")
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if err := objectKeys(dec, out); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

func TestConvertRejects(t *testing.T) {
	for src, msg := range map[string]string{
		`{"a": [1`:             "docs/openapi.json",
		`["a"]`:                "not a mapping",
		`{"openapi": "3.1.0"}`: "paths is missing",
		`{"paths": ["a"]}`:     "paths is missing or not a mapping",
		`{"paths": {"/x": 1}}`: "path /x is not a mapping",
		`{"paths": {"/x": {"get": {}, "parameters": []}}}`: "",
	} {
		j, routes, err := convert([]byte(src))
		switch {
		case msg == "" && (err != nil || len(routes) != 1 || routes[0] != Route{"GET", "/x"}):
			t.Errorf("convert(%q) = %v, %v", src, routes, err)
		case msg == "" && string(j) != `{"paths":{"/x":{"get":{},"parameters":[]}}}`:
			t.Errorf("convert(%q) = %s, not compacted", src, j)
		case msg != "" && (err == nil || !strings.Contains(err.Error(), msg)):
			t.Errorf("convert(%q): error %v, want one mentioning %q", src, err, msg)
		}
	}
}
