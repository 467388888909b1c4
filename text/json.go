package text

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds a small JSON decoder made for Extract. Compared with
// encoding/json decoding into any, it keeps numbers as their literal text,
// keeps unescaped strings as substrings of the payload instead of copies, and
// stores objects as member lists rather than maps, which makes extraction of
// small payloads several times faster. It accepts exactly the JSON that
// encoding/json accepts, and decodes strings the same way (invalid UTF-8 and
// lone surrogates become U+FFFD); duplicate keys resolve to the last one.

// jsonKind is the type of a JSON value.
type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// value is a decoded JSON value.
type value struct {
	kind jsonKind
	// str is the decoded string, the number literal, or "true" / "false".
	str string
	// keys are an object's member names and elems its member values, in
	// document order; for an array, elems are its elements.
	keys  []string
	elems []value
}

// maxDepth bounds the nesting of arrays and objects, as encoding/json does.
const maxDepth = 10000

// parser decodes JSON from s.
type parser struct {
	s     string
	i     int
	depth int
	// The members and elements of the objects and arrays being decoded,
	// innermost last: each takes exactly the room it needs once it is
	// complete, instead of growing its slices member by member.
	keys  []string
	elems []value
}

// parseJSON decodes exactly one JSON value from data, which may be surrounded
// by white space.
func parseJSON(data string) (value, error) {
	st := stackPool.Get().(*parseStacks)
	p := parser{s: data, keys: st.keys, elems: st.elems}
	v, err := p.top()
	if cap(p.keys) <= maxKeptStack && cap(p.elems) <= maxKeptStack {
		// Every object and array truncated what it pushed: nothing of
		// data stays reachable from the pool.
		st.keys, st.elems = p.keys[:0], p.elems[:0]
		stackPool.Put(st)
	}
	return v, err
}

func (p *parser) top() (value, error) {
	p.space()
	if p.i == len(p.s) {
		return value{}, errors.New("invalid JSON: empty")
	}
	v, err := p.value()
	if err != nil {
		return value{}, err
	}
	p.space()
	if p.i != len(p.s) {
		return value{}, p.errorf("data after the top-level value")
	}
	return v, nil
}

// parseStacks are a parser's member and element stacks, kept for reuse.
type parseStacks struct {
	keys  []string
	elems []value
}

var stackPool = sync.Pool{New: func() any { return new(parseStacks) }}

// maxKeptStack bounds the stacks kept for reuse (a huge payload's are
// dropped).
const maxKeptStack = 4096

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", p.i, fmt.Sprintf(format, args...))
}

// space skips white space.
func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value() (value, error) {
	if p.i == len(p.s) {
		return value{}, p.errorf("unexpected end of input")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.string()
		return value{kind: jsonString, str: s}, err
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true", value{kind: jsonBool, str: "true"})
	case c == 'f':
		return p.literal("false", value{kind: jsonBool, str: "false"})
	case c == 'n':
		return p.literal("null", value{kind: jsonNull})
	default:
		return value{}, p.errorf("unexpected character %q", c)
	}
}

func (p *parser) literal(lit string, v value) (value, error) {
	if !strings.HasPrefix(p.s[p.i:], lit) {
		return value{}, p.errorf("invalid literal")
	}
	p.i += len(lit)
	return v, nil
}

func (p *parser) number() (value, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.i < len(p.s) && '1' <= p.s[p.i] && p.s[p.i] <= '9':
		p.digits()
	default:
		return value{}, p.errorf("invalid number")
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return value{}, p.errorf("invalid number")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return value{}, p.errorf("invalid number")
		}
	}
	return value{kind: jsonNumber, str: p.s[start:p.i]}, nil
}

// digits skips decimal digits and returns how many there were.
func (p *parser) digits() int {
	start := p.i
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}

// string decodes the string starting at the opening quote at s[i]. A string
// without escapes and with valid UTF-8 is returned as a substring of s.
func (p *parser) string() (string, error) {
	p.i++ // opening quote
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			if !utf8.ValidString(s) {
				return replaceInvalid(s), nil
			}
			return s, nil
		case c == '\\':
			return p.escapedString(start)
		case c < 0x20:
			return "", p.errorf("control character in string")
		}
		p.i++
	}
	return "", p.errorf("unterminated string")
}

// escapedString decodes the rest of a string that holds escapes; start is
// the offset of its first character.
func (p *parser) escapedString(start int) (string, error) {
	// Escapes only shrink, so the raw length up to the closing quote bounds
	// the decoded length.
	end := p.i
	for end < len(p.s) && p.s[end] != '"' {
		if p.s[end] == '\\' {
			end++
		}
		end++
	}
	var b strings.Builder
	b.Grow(end - start)
	b.WriteString(p.s[start:p.i])
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			s := b.String()
			if !utf8.ValidString(s) {
				return replaceInvalid(s), nil
			}
			return s, nil
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c != '\\':
			j := p.i + 1
			for j < len(p.s) && p.s[j] != '"' && p.s[j] != '\\' && p.s[j] >= 0x20 {
				j++
			}
			b.WriteString(p.s[p.i:j])
			p.i = j
			continue
		}
		if p.i+1 >= len(p.s) {
			break
		}
		p.i += 2
		switch e := p.s[p.i-1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by an escaped low one is a pair;
				// anything else is a lone surrogate.
				if r < 0xDC00 && strings.HasPrefix(p.s[p.i:], "\\u") {
					save := p.i
					p.i += 2
					if r2, ok := p.hex4(); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b.WriteRune(dec)
							continue
						}
					}
					p.i = save // reread the second escape on its own
				}
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			p.i--
			return "", p.errorf("invalid escape \\%c", e)
		}
	}
	return "", p.errorf("unterminated string")
}

// hex4 decodes four hexadecimal digits at s[i].
func (p *parser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(p.s[p.i : p.i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	p.i += 4
	return r, true
}

// replaceInvalid replaces each byte of an invalid UTF-8 sequence in s with
// U+FFFD, as encoding/json does.
func replaceInvalid(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func (p *parser) array() (value, error) {
	if p.depth++; p.depth > maxDepth {
		return value{}, p.errorf("nested too deeply")
	}
	p.i++ // [
	v := value{kind: jsonArray}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		p.depth--
		return v, nil
	}
	base := len(p.elems)
	defer p.truncate(len(p.keys), base)
	for {
		p.space()
		e, err := p.value()
		if err != nil {
			return value{}, err
		}
		p.elems = append(p.elems, e)
		p.space()
		if p.i == len(p.s) {
			return value{}, p.errorf("unexpected end of input")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			p.depth--
			v.elems = slices.Clone(p.elems[base:])
			return v, nil
		default:
			return value{}, p.errorf("expected ',' or ']'")
		}
	}
}

// truncate drops the member names and values above the given stack
// heights (what a failed or finished object or array pushed).
func (p *parser) truncate(keys, elems int) {
	clear(p.keys[keys:])
	p.keys = p.keys[:keys]
	clear(p.elems[elems:])
	p.elems = p.elems[:elems]
}

func (p *parser) object() (value, error) {
	if p.depth++; p.depth > maxDepth {
		return value{}, p.errorf("nested too deeply")
	}
	p.i++ // {
	v := value{kind: jsonObject}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.depth--
		return v, nil
	}
	kbase, ebase := len(p.keys), len(p.elems)
	defer p.truncate(kbase, ebase)
	for {
		p.space()
		if p.i == len(p.s) || p.s[p.i] != '"' {
			return value{}, p.errorf("expected a member name")
		}
		k, err := p.string()
		if err != nil {
			return value{}, err
		}
		p.space()
		if p.i == len(p.s) || p.s[p.i] != ':' {
			return value{}, p.errorf("expected ':'")
		}
		p.i++
		p.space()
		e, err := p.value()
		if err != nil {
			return value{}, err
		}
		p.keys = append(p.keys, k)
		p.elems = append(p.elems, e)
		p.space()
		if p.i == len(p.s) {
			return value{}, p.errorf("unexpected end of input")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			p.depth--
			v.keys = slices.Clone(p.keys[kbase:])
			v.elems = slices.Clone(p.elems[ebase:])
			return v, nil
		default:
			return value{}, p.errorf("expected ',' or '}'")
		}
	}
}

// get returns the value of the member key of an object, the last one when
// the key is repeated.
func (v *value) get(key string) (*value, bool) {
	for i := len(v.keys) - 1; i >= 0; i-- {
		if v.keys[i] == key {
			return &v.elems[i], true
		}
	}
	return nil, false
}

// sortedMembers returns the indexes of an object's members in byte order of
// their keys, leaving out all but the last of repeated keys.
func (v *value) sortedMembers() []int {
	idx := make([]int, len(v.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(v.keys[a], v.keys[b]) })
	out := idx[:0]
	for n, i := range idx {
		if n+1 < len(idx) && v.keys[idx[n+1]] == v.keys[i] {
			continue // a later member has the same key
		}
		out = append(out, i)
	}
	return out
}
