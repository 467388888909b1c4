package text

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// toAny converts a decoded value to what encoding/json decodes with
// UseNumber, so that the two decoders can be compared.
func toAny(v *value) any {
	switch v.kind {
	case jsonBool:
		return v.str == "true"
	case jsonNumber:
		return json.Number(v.str)
	case jsonString:
		return v.str
	case jsonArray:
		a := make([]any, len(v.elems))
		for i := range v.elems {
			a[i] = toAny(&v.elems[i])
		}
		return a
	case jsonObject:
		m := make(map[string]any, len(v.keys))
		for i, k := range v.keys {
			m[k] = toAny(&v.elems[i])
		}
		return m
	}
	return nil
}

// compareWithStdlib checks that parseJSON accepts data exactly when
// encoding/json does, and decodes it to the same value.
func compareWithStdlib(t *testing.T, data string) {
	t.Helper()
	got, err := parseJSON(data)
	if valid := json.Valid([]byte(data)); valid != (err == nil) {
		t.Fatalf("parseJSON(%q): error %v, but encoding/json says valid=%v", data, err, valid)
	}
	if err != nil {
		return
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(data)))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if g := toAny(&got); !reflect.DeepEqual(g, want) {
		t.Fatalf("parseJSON(%q) = %#v, encoding/json gives %#v", data, g, want)
	}
}

func TestParseJSON(t *testing.T) {
	for _, data := range []string{
		"", " ", "1", " 1 ", "-0", "01", "-", "1.", ".5", "1.5e", "1e+", "1E-7", "-12.5e+3", "123456789012345678901234567890",
		"true", "false", "null", "tru", "nul", "True", "nullx",
		`""`, `"a"`, `"\"\\\/\b\f\n\r\t"`, `"\x"`, `"\u12"`, `"\u00e9\u4F60"`, `"\ud83d\ude00"`, `"\ud83d"`,
		`"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\ud83dx"`, `"\ud83d\ud83d\ude00"`, `"\ud83d\uzzzz"`,
		"\"a\tb\"", "\"a\x01\"", "\"\xff\"", "\"a\xc3\x28b\"", "\"\xed\xa0\x80\"", `"unterminated`, `"esc\`,
		"[]", "[ ]", "[1,]", "[,1]", "[1 2]", "[1,[2,[3]]]", "[", "]",
		"{}", "{ }", `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `{"a":}`, `{"a":1 "b":2}`, `{"a":1,"a":2}`,
		`{"":0}`, `{"a":{"b":[{"c":null}]}}`, "{", "}", `{"a"`, `{"a":`,
		"1 2", "{}x", "\u00a0{}", "\ufeff{}", "{}\n\t\r ", "\n[1]\n",
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	} {
		compareWithStdlib(t, data)
	}
}

// randomJSON returns a random JSON text, with valid and invalid spots.
func randomJSON(rng *rand.Rand, depth int) string {
	switch k := rng.Intn(10); {
	case depth > 3 || k < 3:
		scalars := []string{"0", "-1.5e3", "42", "true", "false", "null", `"x"`, `"é\n"`, `"\u00e9"`, `"\ud83d\ude00"`,
			`"a\"b"`, `"\ud800"`, "\"\xff\"", `""`, "01", "1.", `"\q"`}
		return scalars[rng.Intn(len(scalars))]
	case k < 6:
		var b strings.Builder
		b.WriteByte('[')
		for i := range rng.Intn(4) {
			if i > 0 {
				b.WriteString([]string{",", ", ", " ,", ",,"}[rng.Intn(4)])
			}
			b.WriteString(randomJSON(rng, depth+1))
		}
		b.WriteByte(']')
		return b.String()
	default:
		var b strings.Builder
		b.WriteByte('{')
		for i := range rng.Intn(4) {
			if i > 0 {
				b.WriteString([]string{",", " , ", ",,"}[rng.Intn(3)])
			}
			b.WriteString(strconv.Quote([]string{"a", "b", "a", "", "é", "k k"}[rng.Intn(6)]))
			b.WriteString([]string{":", " : ", ""}[rng.Intn(3)])
			b.WriteString(randomJSON(rng, depth+1))
		}
		b.WriteByte('}')
		return b.String()
	}
}

func TestParseJSONRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for range 5000 {
		compareWithStdlib(t, randomJSON(rng, 0))
	}
}

// FuzzParseJSON compares parseJSON with encoding/json on arbitrary input.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",null]}`, `"\ud83d\ude00"`, "-1.5e+3", "[1,]"} {
		f.Add(s)
	}
	f.Fuzz(compareWithStdlib)
}

func TestSortedMembers(t *testing.T) {
	v, err := parseJSON(`{"b":1,"a":2,"b":3,"c":4,"a":5}`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range v.sortedMembers() {
		got = append(got, v.keys[i]+"="+v.elems[i].str)
	}
	if want := []string{"a=5", "b=3", "c=4"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sortedMembers = %q, want %q", got, want)
	}
}
