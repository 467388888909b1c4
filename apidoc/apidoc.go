// Package apidoc serves Loci's API reference as JSON and lists the routes it
// describes.
//
// The reference is written in YAML, docs/openapi.yaml. At go generate time
// internal/openapigen converts it with a YAML library to docs/openapi.json,
// keys in document order, which the root package embeds (loci.OpenAPIJSON);
// this package only reads JSON, so the product links no YAML code. A test
// fails while docs/openapi.json is out of date: after editing the YAML run
//
//	go generate ./apidoc
package apidoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/loci-memory/loci"
)

// Route is one operation of the document: an HTTP method and a path template
// as written under paths, such as GET /v1/artifacts/{artifact_id}.
type Route struct {
	Method string // upper case
	Path   string
}

func (r Route) String() string { return r.Method + " " + r.Path }

// methods are the operation keys of an OpenAPI path item.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

var doc struct {
	once   sync.Once
	json   []byte
	routes []Route
	err    error
}

func load() {
	doc.json, doc.routes, doc.err = convert(loci.OpenAPIJSON)
}

// convert compacts the generated JSON document and returns it with its
// routes.
func convert(src []byte) ([]byte, []Route, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, src); err != nil {
		return nil, nil, fmt.Errorf("apidoc: docs/openapi.json: %w", err)
	}
	routes, err := routesOf(b.Bytes())
	if err != nil {
		return nil, nil, err
	}
	return b.Bytes(), routes, nil
}

func routesOf(j []byte) ([]Route, error) {
	var d map[string]json.RawMessage
	if err := json.Unmarshal(j, &d); err != nil {
		return nil, fmt.Errorf("apidoc: docs/openapi.json: the document is not a mapping")
	}
	var paths map[string]json.RawMessage
	if pv, ok := d["paths"]; !ok || !isObject(pv) || json.Unmarshal(pv, &paths) != nil {
		return nil, fmt.Errorf("apidoc: docs/openapi.json: paths is missing or not a mapping")
	}
	var routes []Route
	for path, iv := range paths {
		var item map[string]json.RawMessage
		if !isObject(iv) || json.Unmarshal(iv, &item) != nil {
			return nil, fmt.Errorf("apidoc: docs/openapi.json: path %s is not a mapping", path)
		}
		for k := range item {
			if slices.Contains(methods, k) {
				routes = append(routes, Route{Method: strings.ToUpper(k), Path: path})
			}
		}
	}
	slices.SortFunc(routes, func(a, b Route) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Method, b.Method)
	})
	return routes, nil
}

func isObject(v json.RawMessage) bool { return len(v) > 0 && v[0] == '{' }

// JSON returns the API reference as a compact JSON document, keys in the
// order of the YAML source. It is computed once; each call returns a fresh
// copy.
func JSON() ([]byte, error) {
	doc.once.Do(load)
	if doc.err != nil {
		return nil, doc.err
	}
	return slices.Clone(doc.json), nil
}

// Routes returns every (method, path) operation under paths, sorted by path
// and then method.
func Routes() ([]Route, error) {
	doc.once.Do(load)
	if doc.err != nil {
		return nil, doc.err
	}
	return slices.Clone(doc.routes), nil
}
