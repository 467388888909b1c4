package pack

import (
	"strconv"
	"strings"
	"time"
)

// The context text is a sequence of lines, each ending in "\n", with no
// blank lines:
//
//	=== PINNED CONTEXT (Authoritative) ===
//	[cite:1] <date> [<time>] [<speaker>: ]<pinned span text>
//	=== TOP EVIDENCE (Most Relevant to Query) ===
//	[cite:2] 2026-10-13 14:30 Maya: <span text>
//	[cite:3] 2026-10-02 document: <span text>
//	=== CONFLICTS ===
//	Conflict [cite:2] vs [cite:3]: <description>
//	=== END CONTEXT ===
//
// Each evidence line says when and who (evidenceHead): the artifact's date
// (UTC, YYYY-MM-DD), its time (HH:MM) unless the timestamp is a bare date
// (exactly 00:00:00.000000), and its speaker. A chat turn's text already
// starts with its speaker ("Maya: ...", text.ChatSpeaker), so the first span
// of a turn gets the date only; any other span gets the artifact's actor_id,
// or its type when it has no actor. The head is part of the line and of its
// token count.
//
// A section without lines is left out with its header; a pack without
// evidence is the empty string. Line breaks inside span text (and the head)
// are replaced by spaces (see flatten), so every evidence line is exactly
// one line and no span text can forge a header or a [cite:N] line.
const (
	headerPinned    = "=== PINNED CONTEXT (Authoritative) ===\n"
	headerEvidence  = "=== TOP EVIDENCE (Most Relevant to Query) ===\n"
	headerConflicts = "=== CONFLICTS ===\n"
	footer          = "=== END CONTEXT ===\n"
)

// flatten returns s with every line break ("\r\n", "\n", "\r", "\v", "\f",
// U+0085, U+2028, U+2029) replaced by one space.
func flatten(s string) string {
	if !hasBreak(s) {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", " ")
	return strings.Map(func(r rune) rune {
		switch r {
		case '\n', '\r', '\v', '\f', 0x85, 0x2028, 0x2029:
			return ' '
		}
		return r
	}, s)
}

// hasBreak reports whether s holds a line break that flatten replaces.
func hasBreak(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n', '\r', '\v', '\f':
			return true
		case 0xC2: // U+0085 is C2 85
			if i+1 < len(s) && s[i+1] == 0x85 {
				return true
			}
		case 0xE2: // U+2028 and U+2029 are E2 80 A8 and E2 80 A9
			if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
				return true
			}
		}
	}
	return false
}

// evidenceHead returns what an evidence line says before the span text:
// "<date> [<time> ][<speaker>: ]" (see the layout above). It is a function of
// the candidate's artifact fields and its turn's speaker alone.
func evidenceHead(c *Candidate) string {
	t := time.UnixMicro(c.Timestamp).UTC()
	layout := "2006-01-02 15:04 "
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		layout = "2006-01-02 "
	}
	head := t.Format(layout)
	if c.SourceType == "chat_turn" && c.Start == 0 {
		return head // the turn's text starts with its speaker
	}
	who := c.CreatorID
	if c.SourceType == "chat_turn" && c.TurnSpeaker != "" {
		who = c.TurnSpeaker // a later span of the turn: its speaker, not the client's id
	}
	if who == "" {
		who = c.SourceType
	}
	if who == "" {
		return head
	}
	return head + who + ": "
}

// renderedLine returns the evidence line of c without its cite tag: its
// head and its text, flattened.
func renderedLine(c *Candidate) string { return flatten(evidenceHead(c) + c.Text) }

// FormatTime returns a Unix µs time as the API shows times: RFC 3339 in
// UTC, with as many fractional digits as it needs.
func FormatTime(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339Nano) }

// optional returns nil for "", else a pointer to s (a JSON null or string).
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// citeTag returns "[cite:n]".
func citeTag(n int) string { return "[cite:" + strconv.Itoa(n) + "]" }

// evidenceLine returns the line of the span cited as n.
func evidenceLine(n int, rendered string) string {
	return citeTag(n) + " " + rendered + "\n"
}

// conflictLine returns the line of a conflict.
func conflictLine(c *Conflict) string {
	return "Conflict " + citeTag(c.CiteA) + " vs " + citeTag(c.CiteB) + ": " + c.Description + "\n"
}

// layout assembles the context text from the included spans, in cite
// order, and the conflicts among them. It returns the whole text and its
// pinned and top evidence sections.
func layout(pinned, working []*cand, conflicts []Conflict) (text, prefix, ws string) {
	if len(pinned)+len(working) == 0 {
		return "", "", ""
	}
	section := func(header string, cs []*cand) string {
		if len(cs) == 0 {
			return ""
		}
		n := len(header)
		for _, c := range cs {
			n += len(c.rendered) + 16
		}
		var b strings.Builder
		b.Grow(n)
		b.WriteString(header)
		for _, c := range cs {
			b.WriteString(evidenceLine(c.cite, c.rendered))
		}
		return b.String()
	}
	prefix = section(headerPinned, pinned)
	ws = section(headerEvidence, working)
	var b strings.Builder
	b.Grow(len(prefix) + len(ws) + len(headerConflicts) + 100*len(conflicts) + len(footer))
	b.WriteString(prefix)
	b.WriteString(ws)
	if len(conflicts) > 0 {
		b.WriteString(headerConflicts)
		for i := range conflicts {
			b.WriteString(conflictLine(&conflicts[i]))
		}
	}
	b.WriteString(footer)
	return b.String(), prefix, ws
}
