package apidoc

import (
	"encoding/json"
	"strings"
	"testing"
)

// toJSON parses src and encodes the result, for comparing whole values.
func toJSON(t *testing.T, src string) string {
	t.Helper()
	v, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	b, err := appendJSON(nil, v)
	if err != nil {
		t.Fatalf("appendJSON: %v", err)
	}
	if !json.Valid(b) {
		t.Fatalf("invalid JSON %s", b)
	}
	return string(b)
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty document", "", `null`},
		{"only comments", "# a\n\n  # b\n", `null`},
		{"lone scalar", "hello world\n", `"hello world"`},
		{"key order kept", "z: 1\na: 2\nm: 3\n", `{"z":1,"a":2,"m":3}`},
		{"nested mappings", "a:\n  b:\n    c: d\n  e: f\ng: h\n", `{"a":{"b":{"c":"d"},"e":"f"},"g":"h"}`},
		{"empty value is null", "a:\nb: 1\n", `{"a":null,"b":1}`},
		{"empty value at end", "a: 1\nb:", `{"a":1,"b":null}`},
		{"core schema nulls", "a: null\nb: Null\nc: NULL\nd: ~\n", `{"a":null,"b":null,"c":null,"d":null}`},
		{"core schema booleans", "a: true\nb: True\nc: TRUE\nd: false\ne: False\nf: FALSE\n", `{"a":true,"b":true,"c":true,"d":false,"e":false,"f":false}`},
		{"YAML 1.1 words are strings", "a: yes\nb: no\nc: on\nd: off\ne: y\n", `{"a":"yes","b":"no","c":"on","d":"off","e":"y"}`},
		{"integers", "a: 0\nb: -12\nc: +7\nd: 007\ne: 0o17\nf: 0x1F\ng: 9223372036854775807\n", `{"a":0,"b":-12,"c":7,"d":7,"e":15,"f":31,"g":9223372036854775807}`},
		{"floats", "a: 1.5\nb: .5\nc: -0.25\nd: 1e3\ne: 2.5E-3\nf: 1.\ng: 0.08\n", `{"a":1.5,"b":0.5,"c":-0.25,"d":1000,"e":0.0025,"f":1,"g":0.08}`},
		{"number-like strings", "a: 1_000\nb: 0.1.0\nc: 3.1.0\nd: 0b101\ne: 12abc\nf: 0x\n", `{"a":"1_000","b":"0.1.0","c":"3.1.0","d":"0b101","e":"12abc","f":"0x"}`},
		{"quoted scalars stay strings", "a: '1'\nb: \"true\"\nc: 'null'\nd: ''\ne: \"\"\n", `{"a":"1","b":"true","c":"null","d":"","e":""}`},
		{"single-quote escape", "a: 'it''s # not a comment'\n", `{"a":"it's # not a comment"}`},
		{"double-quote escapes", `a: "t\tn\n q\" b\\ s\/ x\x41 u\u00e9 U\U0001F600 0\0"` + "\n", `{"a":"t\tn\n q\" b\\ s/ xA ué U😀 0\u0000"}`},
		{"quoted keys", "'200': ok\n\"a b\": c\n'x: y': z\n", `{"200":"ok","a b":"c","x: y":"z"}`},
		{"plain keys keep their text", "200: ok\ntrue: yes\n", `{"200":"ok","true":"yes"}`},
		{"plain scalars with indicators inside", "a: http://127.0.0.1:3000/x\nb: a#b\nc: /v1/keys/{key_id}\nd: x [y] z\ne: -1x\nf: ?x\ng: :x\n", `{"a":"http://127.0.0.1:3000/x","b":"a#b","c":"/v1/keys/{key_id}","d":"x [y] z","e":"-1x","f":"?x","g":":x"}`},
		{"comments", "# head\na: 1 # one\n   # odd indent\nb: 'x' # two\nc: [a] # three\nd: # four\n  e: f\n", `{"a":1,"b":"x","c":["a"],"d":{"e":"f"}}`},
		{"trailing spaces", "a: b   \nc:   \n", `{"a":"b","c":null}`},
		{"sequence of scalars", "- a\n- 1\n- 'b'\n-\n- true\n", `["a",1,"b",null,true]`},
		{"sequence under key", "a:\n  - x\n  - y\nb: 1\n", `{"a":["x","y"],"b":1}`},
		{"compact sequence under key", "a:\n- x\n- y\nb: 1\n", `{"a":["x","y"],"b":1}`},
		{"sequence of mappings", "- name: a\n  in: path\n- name: b\n  schema:\n    type: string\n", `[{"name":"a","in":"path"},{"name":"b","schema":{"type":"string"}}]`},
		{"sequence item on next line", "-\n  a: 1\n-\n  - x\n", `[{"a":1},["x"]]`},
		{"nested compact sequences", "- - a\n  - b\n- - c\n", `[["a","b"],["c"]]`},
		{"wide dash gap", "-   a: 1\n    b: 2\n", `[{"a":1,"b":2}]`},
		{"ref in sequence", "p:\n  - $ref: '#/components/parameters/X'\n", `{"p":[{"$ref":"#/components/parameters/X"}]}`},
		{"empty flow collections", "a: {}\nb: []\nc: { }\nd: [ ]\n", `{"a":{},"b":[],"c":{},"d":[]}`},
		{"empty mapping in sequence", "- {}\n- a: []\n", `[{},{"a":[]}]`},
		{"flow sequence", "a: [x, 'y z', \"w\", 1, 2.5, null, 'null', true, a b]\n", `{"a":["x","y z","w",1,2.5,null,"null",true,"a b"]}`},
		{"flow sequence trailing comma", "a: [x, y,]\n", `{"a":["x","y"]}`},
		{"flow sequence spacing", "a: [ x ,y ]\n", `{"a":["x","y"]}`},
		{"literal clip", "a: |\n  line 1\n    indented\n\n  line 3\n\nb: 1\n", `{"a":"line 1\n  indented\n\nline 3\n","b":1}`},
		{"literal strip", "a: |-\n  x\n  y\n\n", `{"a":"x\ny"}`},
		{"literal keep", "a: |+\n  x\n\n\nb: 1\n", `{"a":"x\n\n\n","b":1}`},
		{"literal keeps comment-like lines", "a: |\n  # not a comment\n  x: y\n", `{"a":"# not a comment\nx: y\n"}`},
		{"literal with header comment", "a: | # note\n  x\n", `{"a":"x\n"}`},
		{"empty literal", "a: |\nb: 1\n", `{"a":"","b":1}`},
		{"literal at end without line break", "a: |\n  x\n  y", `{"a":"x\ny"}`},
		{"keep at end without line break", "a: |+\n  x\n\n  ", `{"a":"x\n\n"}`},
		{"folded at end without line break", "a: >\n  x\n  y", `{"a":"x y"}`},
		{"literal in sequence", "- |\n  x\n- y\n", `["x\n","y"]`},
		{"literal leading empty line", "a: |\n\n  x\n", `{"a":"\nx\n"}`},
		{"folded", "a: >\n  one\n  two\n\n  three\n\n\n  four\nb: 1\n", `{"a":"one two\nthree\n\nfour\n","b":1}`},
		{"folded strip", "a: >-\n  one\n  two\n", `{"a":"one two"}`},
		{"folded ends at lesser indent comment", "a:\n  b: >-\n    x\n  # c\n  d: 1\n", `{"a":{"b":"x","d":1}}`},
		{"CRLF", "a: 1\r\nb:\r\n  - x\r\n", `{"a":1,"b":["x"]}`},
		{"byte order mark", "\ufeffa: 1\n", `{"a":1}`},
		{"no final newline", "a: b", `{"a":"b"}`},
		{"indented document", "  a: 1\n  b: 2\n", `{"a":1,"b":2}`},
		{"unicode", "a: héllo — ✓\n", `{"a":"héllo — ✓"}`},
		{"JSON escaping of output", "a: 'x\"y\\z'\n", `{"a":"x\"y\\z"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := toJSON(t, tc.src); got != tc.want {
				t.Errorf("Parse(%q)\n got %s\nwant %s", tc.src, got, tc.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		msg       string // a part of the message
	}{
		{"anchor", "a: &x 1\n", 1, "anchors"},
		{"alias", "a: 1\nb: *x\n", 2, "aliases"},
		{"tag", "a: !!str 1\n", 1, "tags"},
		{"directive", "%YAML 1.2\na: 1\n", 1, "directives"},
		{"document start", "---\na: 1\n", 1, "document markers"},
		{"document end", "a: 1\n...\n", 2, "document markers"},
		{"complex key", "? a\n: b\n", 1, "complex"},
		{"flow mapping", "a: {b: 1}\n", 1, "flow mappings"},
		{"flow mapping in sequence", "a: [x, {b: 1}]\n", 1, "nested flow"},
		{"nested flow sequence", "a: [[x]]\n", 1, "nested flow"},
		{"multi-line flow sequence", "a: [x,\n  y]\n", 1, "unterminated flow"},
		{"flow sequence comment inside", "a: [x # c\n", 1, "flow sequence"},
		{"empty flow entry", "a: [x,,y]\n", 1, "empty entry"},
		{"lone comma", "a: [,]\n", 1, "empty entry"},
		{"mapping in flow sequence", "a: [x: y]\n", 1, "mapping values"},
		{"text after flow sequence", "a: [x] y\n", 1, "after a value"},
		{"multi-line plain scalar", "a: b\n  c\n", 2, "unexpected indentation"},
		{"multi-line plain in sequence", "- a\n  b\n", 2, "unexpected indentation"},
		{"multi-line double quote", "a: \"b\n  c\"\n", 1, "unterminated double-quoted"},
		{"multi-line single quote", "a: 'b\n  c'\n", 1, "unterminated single-quoted"},
		{"text after quote", "a: 'b' c\n", 1, "after a value"},
		{"comment glued to quote", "a: 'b'#c\n", 1, "after a value"},
		{"mapping value in plain scalar", "a: b: c\n", 1, "mapping values"},
		{"mapping value at end of scalar", "a: b:\n", 1, "mapping values"},
		{"block sequence on key line", "a: - b\n", 1, "block sequence"},
		{"tab indentation", "a:\n\tb: 1\n", 2, "tab"},
		{"tab after dash", "-\tx\n", 1, ""},
		{"duplicate key", "a: 1\nb: 2\na: 3\n", 3, "duplicate key"},
		{"duplicate quoted key", "'a': 1\na: 2\n", 2, "duplicate key"},
		{"bad dedent", "a:\n    b: 1\n  c: 2\n", 3, "unexpected indentation"},
		{"sequence inside mapping", "a: 1\n- b\n", 2, "sequence entry"},
		{"mapping after sequence", "- a\nb: 1\n", 2, "after the document"},
		{"scalar in mapping", "a: 1\nb\n", 2, "mapping key"},
		{"empty key", ": a\n", 1, ""},
		{"explicit indentation indicator", "a: |2\n  x\n", 1, "indentation indicator"},
		{"bad block header", "a: |x\n  y\n", 1, "block scalar header"},
		{"block scalar on its own line", "a:\n  |\n    x\n", 2, "block scalar"},
		{"folded more-indented line", "a: >\n  x\n    y\n", 3, "more-indented"},
		{"leading over-indented empty line", "a: |\n      \n  x\n", 2, "leading empty line"},
		{"infinity", "a: .inf\n", 1, "no JSON"},
		{"negative infinity", "a: -.Inf\n", 1, "no JSON"},
		{"not a number", "a: .NaN\n", 1, "no JSON"},
		{"integer overflow", "a: 9223372036854775808\n", 1, "64-bit"},
		{"float overflow", "a: 1e999\n", 1, "out of range"},
		{"unknown escape", `a: "\q"` + "\n", 1, "unknown escape"},
		{"short escape", `a: "\u12"` + "\n", 1, "escape"},
		{"surrogate escape", `a: "\ud800"` + "\n", 1, "escape"},
		{"reserved at", "a: @x\n", 1, "cannot start"},
		{"reserved backtick", "a: `x`\n", 1, "cannot start"},
		{"stray bracket", "a: ]\n", 1, "cannot start"},
		{"control character", "a: b\x01\n", 1, "control character"},
		{"invalid UTF-8", "a: 1\nb: \xff\n", 2, "UTF-8"},
		{"top-level trailing content", "a: 1\n  # fine\n b: 2\n", 3, "unexpected indentation"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Parse([]byte(tc.src))
			if err == nil {
				b, _ := appendJSON(nil, v)
				t.Fatalf("Parse(%q) = %s, want an error", tc.src, b)
			}
			se, ok := err.(*SyntaxError)
			if !ok {
				t.Fatalf("error %T %v, want *SyntaxError", err, err)
			}
			if se.Line != tc.line {
				t.Errorf("Parse(%q): error on line %d, want %d: %v", tc.src, se.Line, tc.line, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Parse(%q): error %q does not mention %q", tc.src, err, tc.msg)
			}
		})
	}
}

func TestMap(t *testing.T) {
	v, err := Parse([]byte("b: 1\na: [x]\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(*Map)
	if m.Len() != 2 || strings.Join(m.Keys(), ",") != "b,a" {
		t.Fatalf("keys %v", m.Keys())
	}
	m.Keys()[0] = "changed"
	if m.Keys()[0] != "b" {
		t.Error("Keys exposes the map's own slice")
	}
	if x, ok := m.Get("b"); !ok || x != int64(1) {
		t.Errorf("Get(b) = %v, %v", x, ok)
	}
	if _, ok := m.Get("c"); ok {
		t.Error("Get(c) found a missing key")
	}
	b, err := json.Marshal(map[string]any{"doc": m})
	if err != nil || string(b) != `{"doc":{"b":1,"a":["x"]}}` {
		t.Errorf("json.Marshal = %s, %v", b, err)
	}
	var zero Map
	if b, err := zero.MarshalJSON(); err != nil || string(b) != "{}" {
		t.Errorf("zero Map = %s, %v", b, err)
	}
}

func TestAppendJSONFloats(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0", 1.5: "1.5", -0.25: "-0.25", 1e21: "1e+21", 1e20: "100000000000000000000", 1e-7: "1e-07", 0.08: "0.08",
	} {
		b, err := appendJSON(nil, f)
		if err != nil || string(b) != want {
			t.Errorf("appendJSON(%v) = %s, %v; want %s", f, b, err, want)
		}
		var back float64
		if err := json.Unmarshal(b, &back); err != nil || back != f {
			t.Errorf("%s does not read back as %v", b, f)
		}
	}
}
