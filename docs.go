// Package loci is the root of the Loci module. It holds only files that must
// live at the module root; the service itself is in the packages below it.
package loci

import _ "embed"

// OpenAPIYAML is the API reference, docs/openapi.yaml, as written. Package
// apidoc parses it and serves it as JSON.
//
// The variable lives here, at the module root, because go:embed can only reach
// files in the embedding package's directory and below it, never a parent
// directory; docs/ is not a Go package, so the root is the nearest package that
// can see it.
//
//go:embed docs/openapi.yaml
var OpenAPIYAML []byte
