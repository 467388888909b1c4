package apidoc

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is a parser for the subset of YAML 1.2 that docs/openapi.yaml is
// written in. It is deliberately small and strict: whatever falls outside the
// subset is an error with a line number, never a guess.
//
// The subset:
//   - block mappings (plain or quoted keys, unique), block sequences (of
//     scalars, of mappings written "- key: value", of sequences), and a
//     sequence given as a mapping value at the key's own indentation;
//   - plain scalars on one line, single- and double-quoted scalars on one
//     line, literal (|) and folded (>) block scalars with the chomping
//     indicators - and +;
//   - flow sequences of scalars on one line ([a, 'b', 3]) and the empty flow
//     collections {} and [];
//   - comments, blank lines, CRLF line ends, a leading byte order mark;
//   - plain scalars typed by the YAML 1.2 core schema: null, booleans,
//     integers (decimal, 0o octal, 0x hex), floats; everything else a string.
//     Mapping keys are strings: a plain key is taken as written (200: is the
//     key "200"), as JSON needs.
//
// Outside it, and rejected: anchors, aliases, tags, directives, document
// markers, complex (?) keys, flow mappings with content, nested flow
// collections, multi-line plain, quoted or flow scalars, explicit block
// indentation indicators, tabs in indentation, folded scalars with
// more-indented lines, .inf and .nan (JSON has no such numbers), integers
// beyond 64 bits.
//
// Values are nil, bool, int64, float64, string, []any and *Map.

// SyntaxError is the error of Parse: what is wrong and on which line.
type SyntaxError struct {
	Line int // 1-based
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("yaml: line %d: %s", e.Line, e.Msg) }

// Map is a mapping that keeps its keys in document order. Its zero value is an
// empty map.
type Map struct {
	keys []string
	vals map[string]any
}

// Len returns the number of keys.
func (m *Map) Len() int { return len(m.keys) }

// Keys returns the keys in document order.
func (m *Map) Keys() []string { return append([]string(nil), m.keys...) }

// Get returns the value of key k and whether it is present.
func (m *Map) Get(k string) (any, bool) {
	v, ok := m.vals[k]
	return v, ok
}

// MarshalJSON encodes the map as a JSON object with its keys in document order.
func (m *Map) MarshalJSON() ([]byte, error) { return appendJSON(nil, m) }

// set adds k; it reports false when k is already present.
func (m *Map) set(k string, v any) bool {
	if _, dup := m.vals[k]; dup {
		return false
	}
	if m.vals == nil {
		m.vals = map[string]any{}
	}
	m.keys = append(m.keys, k)
	m.vals[k] = v
	return true
}

// Parse parses one YAML document of the subset described above. An empty
// document (only blank lines and comments) is nil.
func Parse(src []byte) (any, error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	l, ok := p.peek()
	if !ok {
		return nil, nil
	}
	v, err := p.node(l.indent)
	if err != nil {
		return nil, err
	}
	if l, ok := p.peek(); ok {
		return nil, p.errf(l, "unexpected content after the document's top-level node (wrong indentation?)")
	}
	return v, nil
}

type line struct {
	num    int    // 1-based line number
	raw    string // the whole line without its line break
	indent int    // leading spaces
	text   string // raw[indent:], except for the rewritten first line of a "- key: value" entry
	blank  bool   // only white space, or a comment
}

type parser struct {
	lines        []line
	pos          int
	finalNewline bool // the source ends with a line break
}

func newParser(src []byte) (*parser, error) {
	src = bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(src) {
		return nil, &SyntaxError{Line: 1 + bytes.Count(src[:firstInvalidUTF8(src)], []byte("\n")), Msg: "invalid UTF-8"}
	}
	s := string(src)
	finalNewline := strings.HasSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\n")
	var lines []line
	if s != "" {
		for i, raw := range strings.Split(s, "\n") {
			raw = strings.TrimSuffix(raw, "\r")
			for _, r := range raw {
				if r < 0x20 && r != '\t' || r == 0x7f {
					return nil, &SyntaxError{Line: i + 1, Msg: fmt.Sprintf("control character %U", r)}
				}
			}
			ind := len(raw) - len(strings.TrimLeft(raw, " "))
			rest := strings.TrimLeft(raw, " \t")
			lines = append(lines, line{
				num:    i + 1,
				raw:    raw,
				indent: ind,
				text:   raw[ind:],
				blank:  rest == "" || rest[0] == '#',
			})
		}
	}
	return &parser{lines: lines, finalNewline: finalNewline}, nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

func (p *parser) errf(l line, format string, args ...any) error {
	return &SyntaxError{Line: l.num, Msg: fmt.Sprintf(format, args...)}
}

// lineBreak is the line break that ends line l: none for the last line of a
// source without a final line break.
func (p *parser) lineBreak(l line) string {
	if l.num == len(p.lines) && !p.finalNewline {
		return ""
	}
	return "\n"
}

// peek skips blank lines and returns the next content line, checking the
// things that are wrong wherever a structural line stands.
func (p *parser) peek() (line, bool) {
	for p.pos < len(p.lines) && p.lines[p.pos].blank {
		p.pos++
	}
	if p.pos == len(p.lines) {
		return line{}, false
	}
	return p.lines[p.pos], true
}

func (p *parser) checkLine(l line) error {
	switch {
	case strings.HasPrefix(l.text, "\t"):
		return p.errf(l, "tab character in indentation")
	case l.indent == 0 && strings.HasPrefix(l.text, "%"):
		return p.errf(l, "directives are not supported")
	case l.indent == 0 && (isMarker(l.text, "---") || isMarker(l.text, "...")):
		return p.errf(l, "document markers are not supported (one document per file)")
	}
	return nil
}

func isMarker(s, m string) bool {
	return strings.HasPrefix(s, m) && (len(s) == 3 || s[3] == ' ' || s[3] == '\t')
}

// entry returns the next content line of a block whose entries stand at
// indentation ind; ok is false at the end of the block (the end of the input
// or a line indented less).
func (p *parser) entry(ind int) (l line, ok bool, err error) {
	l, ok = p.peek()
	if !ok || l.indent < ind {
		return line{}, false, nil
	}
	if l.indent > ind {
		return line{}, false, p.errf(l, "unexpected indentation (multi-line plain scalars are not supported)")
	}
	return l, true, p.checkLine(l)
}

// isSeqEntry reports whether s starts a block sequence entry ("-" then a space
// or the end of the line).
func isSeqEntry(s string) bool {
	return s == "-" || strings.HasPrefix(s, "- ")
}

// node parses the block node whose first line is the current one, at
// indentation ind.
func (p *parser) node(ind int) (any, error) {
	l := p.lines[p.pos]
	if err := p.checkLine(l); err != nil {
		return nil, err
	}
	if isSeqEntry(l.text) {
		return p.sequence(ind)
	}
	if _, _, isKey, err := splitKey(l.text); err != nil {
		return nil, p.errf(l, "%s", err)
	} else if isKey {
		return p.mapping(ind)
	}
	if c := l.text[0]; c == '|' || c == '>' {
		return nil, p.errf(l, "a block scalar must follow a key or a sequence dash on the same line")
	}
	return p.inline(l.text, l, ind)
}

// mapping parses a block mapping whose keys stand at indentation ind.
func (p *parser) mapping(ind int) (any, error) {
	m := &Map{}
	for {
		l, ok, err := p.entry(ind)
		if !ok || err != nil {
			return m, err
		}
		if isSeqEntry(l.text) {
			return nil, p.errf(l, "sequence entry where a mapping key was expected")
		}
		key, rest, isKey, kerr := splitKey(l.text)
		if kerr != nil {
			return nil, p.errf(l, "%s", kerr)
		}
		if !isKey {
			return nil, p.errf(l, "expected a mapping key (key: value)")
		}
		var v any
		if r := strings.TrimLeft(rest, " "); r == "" || r[0] == '#' {
			p.pos++
			if next, ok := p.peek(); ok {
				switch {
				case next.indent > ind:
					v, err = p.node(next.indent)
				case next.indent == ind && isSeqEntry(next.text):
					v, err = p.sequence(ind)
				}
			}
		} else {
			v, err = p.inline(r, l, ind)
		}
		if err != nil {
			return nil, err
		}
		if !m.set(key, v) {
			return nil, p.errf(l, "duplicate key %q", key)
		}
	}
}

// sequence parses a block sequence whose dashes stand at indentation ind.
func (p *parser) sequence(ind int) (any, error) {
	s := []any{}
	for {
		l, ok, err := p.entry(ind)
		if !ok || err != nil {
			return s, err
		}
		if !isSeqEntry(l.text) {
			// The end of a sequence written at its parent key's indentation;
			// the parent decides whether the line belongs to it.
			return s, nil
		}
		after := l.text[1:]
		gap := len(after) - len(strings.TrimLeft(after, " "))
		content := after[gap:]
		var v any
		switch {
		case content == "" || content[0] == '#':
			p.pos++
			if next, ok := p.peek(); ok && next.indent > ind {
				v, err = p.node(next.indent)
			}
		case strings.HasPrefix(content, "\t"):
			err = p.errf(l, "tab character after a sequence dash")
		default:
			_, _, isKey, kerr := splitKey(content)
			if kerr != nil {
				return nil, p.errf(l, "%s", kerr)
			}
			if isKey || isSeqEntry(content) {
				// A compact nested node: read the rest of the line as if it
				// stood on its own line at the content's column.
				col := ind + 1 + gap
				p.lines[p.pos].indent = col
				p.lines[p.pos].text = content
				v, err = p.node(col)
			} else {
				v, err = p.inline(content, l, ind)
			}
		}
		if err != nil {
			return nil, err
		}
		s = append(s, v)
	}
}

// splitKey splits "key: rest" and reports whether s is a mapping entry at all.
// The error is for keys of forms outside the subset.
func splitKey(s string) (key, rest string, isKey bool, err error) {
	switch s[0] {
	case '"', '\'':
		k, n, qerr := quoted(s)
		if qerr != nil {
			return "", "", false, nil // not a key; the value parser reports it
		}
		r := strings.TrimLeft(s[n:], " ")
		if strings.HasPrefix(r, ":") && (len(r) == 1 || r[1] == ' ') {
			return k, r[1:], true, nil
		}
		return "", "", false, nil
	case '?':
		if len(s) == 1 || s[1] == ' ' {
			return "", "", false, fmt.Errorf("complex (?) keys are not supported")
		}
	case '[', '{', '|', '>', '#', '&', '*', '!', '%', '@', '`', ',', ']', '}':
		return "", "", false, nil
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '#' && i > 0 && s[i-1] == ' ':
			return "", "", false, nil // a comment before any ": "
		case s[i] == ':' && (i+1 == len(s) || s[i+1] == ' '):
			k := strings.TrimRight(s[:i], " ")
			if k == "" {
				return "", "", false, fmt.Errorf("empty mapping key")
			}
			if strings.HasPrefix(k, "- ") || k == "-" {
				return "", "", false, nil
			}
			return k, s[i+1:], true, nil
		}
	}
	return "", "", false, nil
}

// inline parses the value text that starts at a key's or a dash's line (text
// is not empty and has no leading space) and moves past the lines it uses.
// ind is the indentation of the key or dash; block scalar content must be
// indented more.
func (p *parser) inline(text string, l line, ind int) (any, error) {
	switch c := text[0]; c {
	case '|', '>':
		return p.blockScalar(text, l, ind)
	case '[':
		p.pos++
		return p.flowSequence(text, l)
	case '{':
		r := strings.TrimLeft(text[1:], " ")
		if !strings.HasPrefix(r, "}") {
			return nil, p.errf(l, "flow mappings are not supported (only the empty {})")
		}
		p.pos++
		return &Map{}, p.trailing(r[1:], l)
	case '"', '\'':
		s, n, err := quoted(text)
		if err != nil {
			return nil, p.errf(l, "%s", err)
		}
		p.pos++
		return s, p.trailing(text[n:], l)
	}
	s, err := plain(text, false)
	if err != nil {
		return nil, p.errf(l, "%s", err)
	}
	v, err := resolve(s)
	if err != nil {
		return nil, p.errf(l, "%s", err)
	}
	p.pos++
	return v, nil
}

// trailing checks what follows a complete value on its line: nothing, or a
// comment after white space.
func (p *parser) trailing(rest string, l line) error {
	r := strings.TrimLeft(rest, " \t")
	if r == "" || r[0] == '#' && len(r) < len(rest) {
		return nil
	}
	return p.errf(l, "unexpected text %q after a value", r)
}

// plain returns the plain scalar at the start of s, up to a comment (and, in a
// flow sequence, up to "," or "]"), checking that it is one.
func plain(s string, flow bool) (string, error) {
	switch c := s[0]; c {
	case '[', ']', '{', '}', ',', '#', '|', '>', '"', '\'', '%', '@', '`':
		return "", fmt.Errorf("a plain scalar cannot start with %q (quote it)", c)
	case '&':
		return "", fmt.Errorf("anchors are not supported")
	case '*':
		return "", fmt.Errorf("aliases are not supported")
	case '!':
		return "", fmt.Errorf("tags are not supported")
	case '-', '?', ':':
		if len(s) == 1 || s[1] == ' ' || s[1] == '\t' || flow && (s[1] == ',' || s[1] == ']') {
			switch c {
			case '-':
				return "", fmt.Errorf("a block sequence cannot start here")
			case '?':
				return "", fmt.Errorf("complex (?) keys are not supported")
			default:
				return "", fmt.Errorf("unexpected %q", ":")
			}
		}
	}
	end := len(s)
scan:
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '#' && (s[i-1] == ' ' || s[i-1] == '\t'):
			end = i
			break scan
		case c == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t' || flow && (s[i+1] == ',' || s[i+1] == ']')):
			return "", fmt.Errorf("mapping values are not allowed here (quote a scalar that contains \": \")")
		case flow && (c == ',' || c == ']'):
			end = i
			break scan
		case flow && (c == '[' || c == '{' || c == '}'):
			return "", fmt.Errorf("nested flow collections are not supported")
		}
	}
	return strings.TrimRight(s[:end], " \t"), nil
}

// flowSequence parses a flow sequence of scalars that opens and closes on
// line l.
func (p *parser) flowSequence(text string, l line) (any, error) {
	out := []any{}
	i := 1
	for {
		for i < len(text) && text[i] == ' ' {
			i++
		}
		if i == len(text) {
			return nil, p.errf(l, "unterminated flow sequence (it must close on the same line)")
		}
		switch text[i] {
		case ']':
			return out, p.trailing(text[i+1:], l)
		case ',':
			return nil, p.errf(l, "empty entry in a flow sequence")
		case '[', '{':
			return nil, p.errf(l, "nested flow collections are not supported")
		case '#':
			return nil, p.errf(l, "unterminated flow sequence (it must close on the same line)")
		case '"', '\'':
			s, n, err := quoted(text[i:])
			if err != nil {
				return nil, p.errf(l, "%s", err)
			}
			out = append(out, s)
			i += n
		default:
			s, err := plain(text[i:], true)
			if err != nil {
				return nil, p.errf(l, "%s", err)
			}
			if i+len(s) == len(text) || text[i+len(s)] != ',' && text[i+len(s)] != ']' && text[i+len(s)] != ' ' {
				return nil, p.errf(l, "unterminated flow sequence (it must close on the same line)")
			}
			v, err := resolve(s)
			if err != nil {
				return nil, p.errf(l, "%s", err)
			}
			out = append(out, v)
			i += len(s)
		}
		for i < len(text) && text[i] == ' ' {
			i++
		}
		switch {
		case i == len(text):
			return nil, p.errf(l, "unterminated flow sequence (it must close on the same line)")
		case text[i] == ',':
			i++
		case text[i] == ']':
			return out, p.trailing(text[i+1:], l)
		default:
			return nil, p.errf(l, "expected , or ] in a flow sequence")
		}
	}
}

// quoted decodes the single- or double-quoted scalar at the start of s and
// returns it with the number of bytes it takes.
func quoted(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q && q == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), i + 1, nil
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\' && q == '"':
			if i+1 == len(s) {
				return "", 0, fmt.Errorf("unterminated double-quoted scalar (it must close on the same line)")
			}
			i++
			if r, ok := simpleEscapes[s[i]]; ok {
				b.WriteRune(r)
				continue
			}
			width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[i]]
			if width == 0 {
				return "", 0, fmt.Errorf("unknown escape \\%c", s[i])
			}
			if i+width >= len(s) {
				return "", 0, fmt.Errorf("short \\%c escape", s[i])
			}
			n, err := strconv.ParseUint(s[i+1:i+1+width], 16, 32)
			if err != nil || !utf8.ValidRune(rune(n)) {
				return "", 0, fmt.Errorf("bad \\%c escape %q", s[i], s[i+1:i+1+width])
			}
			b.WriteRune(rune(n))
			i += width
		default:
			b.WriteByte(c)
		}
	}
	if q == '\'' {
		return "", 0, fmt.Errorf("unterminated single-quoted scalar (it must close on the same line)")
	}
	return "", 0, fmt.Errorf("unterminated double-quoted scalar (it must close on the same line)")
}

var simpleEscapes = map[byte]rune{
	'0': 0, 'a': '\a', 'b': '\b', 't': '\t', '\t': '\t', 'n': '\n', 'v': '\v', 'f': '\f', 'r': '\r',
	'e': 0x1b, ' ': ' ', '"': '"', '/': '/', '\\': '\\', 'N': 0x85, '_': 0xa0, 'L': 0x2028, 'P': 0x2029,
}

// blockScalar parses a literal or folded block scalar whose header is the
// value text on line l; its content lines must be indented more than ind.
func (p *parser) blockScalar(header string, l line, ind int) (any, error) {
	folded := header[0] == '>'
	chomp := byte(0) // clip
	i := 1
	if i < len(header) && (header[i] == '-' || header[i] == '+') {
		chomp = header[i]
		i++
	}
	if i < len(header) && header[i] >= '0' && header[i] <= '9' {
		return nil, p.errf(l, "explicit block indentation indicators are not supported")
	}
	if err := p.trailing(header[i:], l); err != nil {
		return nil, p.errf(l, "bad block scalar header %q", header)
	}
	p.pos++

	type bline struct {
		l     line
		empty bool // only spaces (or nothing) up to the content indentation
	}
	var body []bline
	contentInd := -1
	for p.pos < len(p.lines) {
		bl := p.lines[p.pos]
		if strings.TrimLeft(bl.raw, " ") == "" {
			body = append(body, bline{l: bl, empty: true})
			p.pos++
			continue
		}
		if contentInd < 0 {
			if bl.indent <= ind {
				break
			}
			contentInd = bl.indent
		}
		if bl.indent < contentInd {
			break
		}
		body = append(body, bline{l: bl})
		p.pos++
	}

	// Turn the lines into text lines. A spaces-only line is empty unless it
	// reaches past the content indentation: then, in a literal scalar after
	// the first content line, its extra spaces are content.
	var texts []string
	last := -1 // index of the last line with content
	for _, bl := range body {
		t, hasText := "", !bl.empty
		if hasText {
			t = bl.l.raw[contentInd:]
		} else if contentInd >= 0 && len(bl.l.raw) > contentInd {
			switch {
			case last < 0:
				return nil, p.errf(bl.l, "leading empty line of a block scalar is indented more than its content")
			case folded:
				return nil, p.errf(bl.l, "more-indented lines in folded block scalars are not supported")
			}
			t, hasText = bl.l.raw[contentInd:], true
		}
		if hasText {
			if folded && (t[0] == ' ' || t[0] == '\t') {
				return nil, p.errf(bl.l, "more-indented lines in folded block scalars are not supported")
			}
			last = len(texts)
		}
		texts = append(texts, t)
	}
	content := texts[:last+1]

	var s string
	if !folded {
		s = strings.Join(content, "\n")
	} else {
		var b strings.Builder
		started, pending := false, 0
		for _, t := range content {
			if t == "" {
				pending++
				continue
			}
			if started && pending == 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strings.Repeat("\n", pending))
			b.WriteString(t)
			started, pending = true, 0
		}
		s = b.String()
	}
	// Chomping: strip drops the final line break and the trailing empty
	// lines, clip keeps the final line break, keep keeps them all.
	if last >= 0 && chomp != '-' {
		s += p.lineBreak(body[last].l)
	}
	if chomp == '+' {
		for _, bl := range body[last+1:] {
			s += p.lineBreak(bl.l)
		}
	}
	return s, nil
}

var (
	reInt   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	reOct   = regexp.MustCompile(`^0o[0-7]+$`)
	reHex   = regexp.MustCompile(`^0x[0-9a-fA-F]+$`)
	reFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	reInf   = regexp.MustCompile(`^([-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))$`)
)

// resolve types a plain scalar by the YAML 1.2 core schema.
func resolve(s string) (any, error) {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return nil, nil
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	}
	var (
		n   int64
		err error
	)
	switch {
	case reInt.MatchString(s):
		n, err = strconv.ParseInt(s, 10, 64)
	case reOct.MatchString(s):
		n, err = strconv.ParseInt(s[2:], 8, 64)
	case reHex.MatchString(s):
		n, err = strconv.ParseInt(s[2:], 16, 64)
	case reFloat.MatchString(s):
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("float %s is out of range", s)
		}
		return f, nil
	case reInf.MatchString(s):
		return nil, fmt.Errorf("%s has no JSON representation", s)
	default:
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("integer %s is out of the 64-bit range", s)
	}
	return n, nil
}

// appendJSON appends the JSON encoding of a parsed value to b.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("apidoc: %v has no JSON representation", v)
		}
		// Like encoding/json: shortest representation, exponent only for
		// very large or small magnitudes.
		format := byte('f')
		if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
			format = 'e'
		}
		return strconv.AppendFloat(b, v, format, -1, 64), nil
	case string:
		return appendString(b, v), nil
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case *Map:
		b = append(b, '{')
		for i, k := range v.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendJSON(b, v.vals[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("apidoc: cannot encode %T as JSON", v)
}

// appendString appends s as a JSON string. s is valid UTF-8 (Parse checks it).
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
