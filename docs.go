// Package loci is the root of the Loci module. It holds only files that must
// live at the module root; the service itself is in the packages below it.
package loci

import _ "embed"

// OpenAPIJSON is the API reference in JSON, docs/openapi.json, indented. It is
// generated from docs/openapi.yaml, the document as written, by
// apidoc/internal/openapigen (go generate ./apidoc); package apidoc serves it,
// compacted, as /openapi.json and lists its routes.
//
// The variable lives here, at the module root, because go:embed can only reach
// files in the embedding package's directory and below it, never a parent
// directory; docs/ is not a Go package, so the root is the nearest package that
// can see it.
//
//go:embed docs/openapi.json
var OpenAPIJSON []byte
