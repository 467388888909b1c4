package apidoc

// docs/openapi.json is generated from docs/openapi.yaml by internal/openapigen
// (go.yaml.in/yaml/v4 reads the YAML; neither is linked into the product).
// After editing docs/openapi.yaml run: go generate ./apidoc
//
//go:generate go run ./internal/openapigen -in ../docs/openapi.yaml -out ../docs/openapi.json
