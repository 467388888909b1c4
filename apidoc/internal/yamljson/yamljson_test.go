package yamljson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestConvert(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"lone scalar", "hello world\n", `"hello world"`},
		{"key order kept", "z: 1\na: 2\nm: 3\n", `{"z":1,"a":2,"m":3}`},
		{"nested mappings", "a:\n  b:\n    c: d\n  e: f\ng: h\n", `{"a":{"b":{"c":"d"},"e":"f"},"g":"h"}`},
		{"empty value is null", "a:\nb: 1\n", `{"a":null,"b":1}`},
		{"empty value at end", "a: 1\nb:", `{"a":1,"b":null}`},
		{"nulls", "a: null\nb: Null\nc: NULL\nd: ~\n", `{"a":null,"b":null,"c":null,"d":null}`},
		{"booleans", "a: true\nb: True\nc: TRUE\nd: false\ne: False\nf: FALSE\n", `{"a":true,"b":true,"c":true,"d":false,"e":false,"f":false}`},
		{"YAML 1.1 words are strings", "a: yes\nb: no\nc: on\nd: off\ne: y\n", `{"a":"yes","b":"no","c":"on","d":"off","e":"y"}`},
		{"integers", "a: 0\nb: -12\nc: +7\ne: 0o17\nf: 0x1F\ng: 9223372036854775807\nh: -9223372036854775808\n", `{"a":0,"b":-12,"c":7,"e":15,"f":31,"g":9223372036854775807,"h":-9223372036854775808}`},
		{"floats", "a: 1.5\nb: .5\nc: -0.25\nd: 1e3\ne: 2.5E-3\nf: 1.\ng: 0.08\nh: 1.0\ni: 1e21\nj: 1e-7\n", `{"a":1.5,"b":0.5,"c":-0.25,"d":1000,"e":0.0025,"f":1,"g":0.08,"h":1,"i":1e+21,"j":1e-07}`},
		// A float beyond float64 is a string to the YAML library.
		{"number-like strings", "b: 0.1.0\nc: 3.1.0\ne: 12abc\nf: 0x\ng: 1e999\n", `{"b":"0.1.0","c":"3.1.0","e":"12abc","f":"0x","g":"1e999"}`},
		{"timestamps stay as written", "a: 2024-01-15\nb: 2024-01-15T10:00:00Z\n", `{"a":"2024-01-15","b":"2024-01-15T10:00:00Z"}`},
		{"quoted scalars stay strings", "a: '1'\nb: \"true\"\nc: 'null'\nd: ''\ne: \"\"\nf: '010'\n", `{"a":"1","b":"true","c":"null","d":"","e":"","f":"010"}`},
		{"core tags", "a: !!str 1\nb: !!float 2\nc: !!int '3'\n", `{"a":"1","b":2,"c":3}`},
		{"single-quote escape", "a: 'it''s # not a comment'\n", `{"a":"it's # not a comment"}`},
		{"double-quote escapes", `a: "t\tn\n q\" b\\ s\/ x\x41 u\u00e9 U\U0001F600 0\0"` + "\n", `{"a":"t\tn\n q\" b\\ s/ xA ué U😀 0\u0000"}`},
		{"quoted keys", "'200': ok\n\"a b\": c\n'x: y': z\n", `{"200":"ok","a b":"c","x: y":"z"}`},
		{"plain keys keep their text", "200: ok\ntrue: yes\nnull: 1\n1.50: x\n", `{"200":"ok","true":"yes","null":1,"1.50":"x"}`},
		{"plain scalars with indicators inside", "a: http://127.0.0.1:3000/x\nb: a#b\nc: /v1/keys/{key_id}\nd: x [y] z\ne: -1x\nf: ?x\ng: :x\n", `{"a":"http://127.0.0.1:3000/x","b":"a#b","c":"/v1/keys/{key_id}","d":"x [y] z","e":"-1x","f":"?x","g":":x"}`},
		{"comments", "# head\na: 1 # one\n   # odd indent\nb: 'x' # two\nc: [a] # three\nd: # four\n  e: f\n", `{"a":1,"b":"x","c":["a"],"d":{"e":"f"}}`},
		{"sequence of scalars", "- a\n- 1\n- 'b'\n-\n- true\n", `["a",1,"b",null,true]`},
		{"compact sequence under key", "a:\n- x\n- y\nb: 1\n", `{"a":["x","y"],"b":1}`},
		{"sequence of mappings", "- name: a\n  in: path\n- name: b\n  schema:\n    type: string\n", `[{"name":"a","in":"path"},{"name":"b","schema":{"type":"string"}}]`},
		{"nested compact sequences", "- - a\n  - b\n- - c\n", `[["a","b"],["c"]]`},
		{"ref in sequence", "p:\n  - $ref: '#/components/parameters/X'\n", `{"p":[{"$ref":"#/components/parameters/X"}]}`},
		{"flow collections", "a: {}\nb: []\nc: [x, 'y z', 1, null, [2]]\nd: {k: v, n: 1}\n", `{"a":{},"b":[],"c":["x","y z",1,null,[2]],"d":{"k":"v","n":1}}`},
		{"literal clip", "a: |\n  line 1\n    indented\n\n  line 3\n\nb: 1\n", `{"a":"line 1\n  indented\n\nline 3\n","b":1}`},
		{"literal strip", "a: |-\n  x\n  y\n\n", `{"a":"x\ny"}`},
		{"literal keep", "a: |+\n  x\n\n\nb: 1\n", `{"a":"x\n\n\n","b":1}`},
		{"literal keeps comment-like lines", "a: |\n  # not a comment\n  x: y\n", `{"a":"# not a comment\nx: y\n"}`},
		{"literal at end without line break", "a: |\n  x\n  y", `{"a":"x\ny"}`},
		{"folded", "a: >\n  one\n  two\n\n  three\n\n\n  four\nb: 1\n", `{"a":"one two\nthree\n\nfour\n","b":1}`},
		{"folded strip", "a: >-\n  one\n  two\n", `{"a":"one two"}`},
		{"multi-line plain scalar", "a: one\n  two\n", `{"a":"one two"}`},
		{"aliases are expanded", "a: &x {k: [1]}\nb: *x\n", `{"a":{"k":[1]},"b":{"k":[1]}}`},
		{"document markers", "---\na: 1\n...\n", `{"a":1}`},
		{"CRLF", "a: 1\r\nb:\r\n  - x\r\n", `{"a":1,"b":["x"]}`},
		{"byte order mark", "\ufeffa: 1\n", `{"a":1}`},
		{"unicode", "a: héllo — ✓\n", `{"a":"héllo — ✓"}`},
		{"JSON escaping of output", "a: 'x\"y\\z <&>'\nb: \"\\x01\\r\\u2028\\u2029\"\n", `{"a":"x\"y\\z <&>","b":"\u0001\r\u2028\u2029"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Convert([]byte(tc.src))
			if err != nil {
				t.Fatalf("Convert(%q): %v", tc.src, err)
			}
			if !json.Valid(got) {
				t.Fatalf("Convert(%q) = %s, not valid JSON", tc.src, got)
			}
			if string(got) != tc.want {
				t.Errorf("Convert(%q)\n got %s\nwant %s", tc.src, got, tc.want)
			}
		})
	}
}

func TestConvertRejects(t *testing.T) {
	tests := []struct {
		name, src string
		msg       string // a part of the message
	}{
		{"empty document", "", "no documents"},
		{"only comments", "# a\n", "no documents"},
		{"two documents", "a: 1\n---\nb: 2\n", "multiple"},
		{"duplicate key", "a: 1\nb: 2\na: 3\n", "line 3"},
		{"duplicate quoted key", "'a': 1\na: 2\n", "line 2"},
		{"duplicate key of another type", "1: a\n'1': b\n", "line 2"},
		{"merge key", "a: &x {k: 1}\nb:\n  <<: *x\n", "line 3"},
		{"sequence as key", "? [a]\n: b\n", "keys must be scalars"},
		{"custom tag", "a: !thing x\n", "tag !thing"},
		{"binary", "a: !!binary aGk=\n", "not supported"},
		{"leading zeros", "a: 010\n", "core form"},
		{"underscores", "a: 1_000\n", "core form"},
		{"binary integer", "a: 0b101\n", "core form"},
		{"integer overflow", "a: 9223372036854775808\n", "64-bit"},
		{"infinity", "a: .inf\n", "no JSON"},
		{"negative infinity", "a: -.Inf\n", "no JSON"},
		{"not a number", "a: .NaN\n", "no JSON"},
		{"unknown escape", `a: "\q"` + "\n", "L1.C4"},
		{"tab indentation", "a:\n\tb: 1\n", "L2.C1"},
		{"bad dedent", "a:\n    b: 1\n  c: 2\n", "L3"},
		{"mapping value in plain scalar", "a: b: c\n", "L1.C5"},
		{"invalid UTF-8", "a: 1\nb: \xff\n", "utf-8"},
		{"control character", "a: b\x01\n", "control"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Convert([]byte(tc.src))
			if err == nil {
				t.Fatalf("Convert(%q) = %s, want an error", tc.src, got)
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.msg)) {
				t.Errorf("Convert(%q): error %q does not mention %q", tc.src, err, tc.msg)
			}
		})
	}
}

func TestConvertIndented(t *testing.T) {
	src := []byte("b: 'x y'\na: [1, {c: \"\\t\"}]\n")
	compact, err := Convert(src)
	if err != nil {
		t.Fatal(err)
	}
	ind, err := ConvertIndented(src)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"b\": \"x y\",\n  \"a\": [\n    1,\n    {\n      \"c\": \"\\t\"\n    }\n  ]\n}\n"; string(ind) != want {
		t.Errorf("ConvertIndented = %q, want %q", ind, want)
	}
	var back bytes.Buffer
	if err := json.Compact(&back, ind); err != nil || !bytes.Equal(back.Bytes(), compact) {
		t.Errorf("compacting the indented form gives %s, want %s", back.Bytes(), compact)
	}
}

func TestAppendFloat(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0", 1.5: "1.5", -0.25: "-0.25", 1e21: "1e+21", 1e20: "100000000000000000000", 1e-7: "1e-07", 0.08: "0.08",
	} {
		if got := string(appendFloat(nil, f)); got != want {
			t.Errorf("appendFloat(%v) = %s, want %s", f, got, want)
		}
		var back float64
		if err := json.Unmarshal([]byte(want), &back); err != nil || back != f {
			t.Errorf("%s does not read back as %v", want, f)
		}
	}
}
