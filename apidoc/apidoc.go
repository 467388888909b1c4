// Package apidoc serves Loci's API reference, docs/openapi.yaml (embedded as
// loci.OpenAPIYAML), as JSON, and lists the routes it describes.
//
// The project takes no YAML dependency for this: the document is written in a
// small subset of YAML (see yaml.go) that Parse reads strictly, rejecting
// anything outside it with a line number.
package apidoc

import (
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
	doc.json, doc.routes, doc.err = convert(loci.OpenAPIYAML)
}

// convert parses an OpenAPI document and returns its JSON and routes.
func convert(src []byte) ([]byte, []Route, error) {
	v, err := Parse(src)
	if err != nil {
		return nil, nil, fmt.Errorf("apidoc: docs/openapi.yaml: %w", err)
	}
	m, ok := v.(*Map)
	if !ok {
		return nil, nil, fmt.Errorf("apidoc: docs/openapi.yaml: the document is not a mapping")
	}
	j, err := appendJSON(nil, m)
	if err != nil {
		return nil, nil, err
	}
	routes, err := routesOf(m)
	if err != nil {
		return nil, nil, err
	}
	return j, routes, nil
}

func routesOf(d *Map) ([]Route, error) {
	pv, _ := d.Get("paths")
	paths, ok := pv.(*Map)
	if !ok {
		return nil, fmt.Errorf("apidoc: docs/openapi.yaml: paths is missing or not a mapping")
	}
	var routes []Route
	for _, path := range paths.keys {
		item, ok := paths.vals[path].(*Map)
		if !ok {
			return nil, fmt.Errorf("apidoc: docs/openapi.yaml: path %s is not a mapping", path)
		}
		for _, k := range item.keys {
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

// JSON returns the API reference as a JSON document, keys in the order of the
// YAML source. It is computed once; each call returns a fresh copy.
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
