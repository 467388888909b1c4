// Package yamljson converts a YAML document to compact JSON with the keys of
// every mapping in document order. The YAML is read by go.yaml.in/yaml/v4;
// this package only walks the node tree it yields and writes the JSON.
//
// It is used at go generate time (apidoc/internal/openapigen) and by tests,
// never by the product, so the YAML library is not linked into the binary.
//
// Conversion rules:
//   - mapping keys are strings: a scalar key is taken as written (200: is the
//     key "200"); a duplicate key, a non-scalar key or a merge key (<<) is an
//     error;
//   - aliases are expanded;
//   - plain scalars are typed as the YAML library resolves them (null, true and
//     false in three casings, integers, floats, strings; YAML 1.1 words such as
//     yes and on stay strings), except that timestamps stay strings as written
//     (JSON has none) and integers must have a YAML 1.2 core schema form
//     (decimal without leading zeros, 0o octal, 0x hex) and fit in 64 bits,
//     so that 010 or 1_000 is an error rather than a silent 8 or 1000;
//   - .inf and .nan are errors (JSON has no such numbers);
//   - explicit tags other than the core ones (!!str, !!int, !!float, !!bool,
//     !!null, !!seq, !!map) are errors.
package yamljson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
)

// Convert parses src, which must hold exactly one YAML document, and returns
// its compact JSON encoding.
func Convert(src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Load(src, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("yaml: not a single document")
	}
	return appendNode(nil, doc.Content[0], 0)
}

// ConvertIndented is Convert with the JSON indented by two spaces and ended
// by a line break, for a committed file whose diffs can be read; json.Compact
// turns it back into exactly the bytes of Convert.
func ConvertIndented(src []byte) ([]byte, error) {
	compact, err := Convert(src)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// maxDepth bounds the nesting, counting expanded aliases.
const maxDepth = 1000

func errAt(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("yaml: line %d: %s", n.Line, fmt.Sprintf(format, args...))
}

func appendNode(b []byte, n *yaml.Node, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errAt(n, "nested more than %d levels deep", maxDepth)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return appendNode(b, n.Alias, depth+1)
	case yaml.ScalarNode:
		return appendScalar(b, n)
	case yaml.SequenceNode:
		if err := checkTag(n, "!!seq"); err != nil {
			return nil, err
		}
		b = append(b, '[')
		for i, e := range n.Content {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendNode(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case yaml.MappingNode:
		if err := checkTag(n, "!!map"); err != nil {
			return nil, err
		}
		seen := make(map[string]bool, len(n.Content)/2)
		b = append(b, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := key(n.Content[i])
			if err != nil {
				return nil, err
			}
			if seen[k] {
				return nil, errAt(n.Content[i], "duplicate key %q", k)
			}
			seen[k] = true
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			if b, err = appendNode(b, n.Content[i+1], depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, errAt(n, "unexpected node kind %v", n.Kind)
}

// checkTag refuses an explicit tag other than want on a collection.
func checkTag(n *yaml.Node, want string) error {
	if t := n.ShortTag(); t != want {
		return errAt(n, "tag %s is not supported", t)
	}
	return nil
}

// key returns a mapping key as a string: a scalar, as written.
func key(n *yaml.Node) (string, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return "", errAt(n, "mapping keys must be scalars")
	}
	switch n.ShortTag() {
	case "!!merge":
		return "", errAt(n, "merge keys (<<) are not supported")
	case "!!str", "!!int", "!!float", "!!bool", "!!null", "!!timestamp":
		return n.Value, nil
	}
	return "", errAt(n, "tag %s is not supported", n.ShortTag())
}

// YAML 1.2 core schema integer forms.
var (
	reDec = regexp.MustCompile(`^[-+]?(0|[1-9][0-9]*)$`)
	reOct = regexp.MustCompile(`^0o[0-7]+$`)
	reHex = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
)

func appendScalar(b []byte, n *yaml.Node) ([]byte, error) {
	s := n.Value
	switch t := n.ShortTag(); t {
	case "!!str", "!!timestamp":
		return appendString(b, s), nil
	case "!!null":
		return append(b, "null"...), nil
	case "!!bool":
		switch s {
		case "true", "True", "TRUE":
			return append(b, "true"...), nil
		case "false", "False", "FALSE":
			return append(b, "false"...), nil
		}
		return nil, errAt(n, "%q is not a boolean", s)
	case "!!int":
		var (
			v   int64
			err error
		)
		switch {
		case reDec.MatchString(s):
			v, err = strconv.ParseInt(s, 10, 64)
		case reOct.MatchString(s):
			v, err = strconv.ParseInt(s[2:], 8, 64)
		case reHex.MatchString(s):
			v, err = strconv.ParseInt(s[2:], 16, 64)
		default:
			return nil, errAt(n, "integer %s is not in a YAML 1.2 core form (decimal without leading zeros, 0o, 0x); quote it if it is a string", s)
		}
		if err != nil {
			return nil, errAt(n, "integer %s is out of the 64-bit range", s)
		}
		return strconv.AppendInt(b, v, 10), nil
	case "!!float":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			switch s {
			case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN":
				return nil, errAt(n, "%s has no JSON representation", s)
			}
			return nil, errAt(n, "float %s: %v", s, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, errAt(n, "float %s has no JSON representation", s)
		}
		return appendFloat(b, f), nil
	default:
		return nil, errAt(n, "tag %s is not supported", t)
	}
}

// appendFloat appends f as a JSON number like encoding/json: the shortest
// representation, with an exponent only for very large or small magnitudes.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64)
}

// appendString appends s as a JSON string. Only ", \, control characters,
// U+2028 and U+2029 are escaped (not <, > or &); invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b = append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}
