package text

import (
	"os"
	"strings"
	"testing"
)

// TestArtifactDocExamples checks docs/artifacts.md: each "```json TYPE"
// block, extracted as an artifact of that type, gives the "```text" block
// that follows it, and every artifact type has an example.
func TestArtifactDocExamples(t *testing.T) {
	raw, err := os.ReadFile("../docs/artifacts.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := fencedBlocks(string(raw))
	types := map[string]bool{}
	for i := 0; i < len(blocks); i++ {
		typ, ok := strings.CutPrefix(blocks[i].info, "json ")
		if !ok {
			continue
		}
		if i+1 >= len(blocks) || blocks[i+1].info != "text" {
			t.Fatalf("the %s example has no text block after it", typ)
		}
		got, err := Extract(typ, "", []byte(blocks[i].body))
		if err != nil {
			t.Fatalf("%s example: %v", typ, err)
		}
		if want := blocks[i+1].body; got != want {
			t.Errorf("%s example %s extracts as\n%s\nwant (docs/artifacts.md)\n%s", typ, blocks[i].body, got, want)
		}
		types[typ] = true
	}
	for _, typ := range []string{"chat_turn", "tool_call", "tool_result", "document", "note", "meeting_transcript", "email", "calendar_event", "attachment"} {
		if !types[typ] {
			t.Errorf("docs/artifacts.md has no example of %s", typ)
		}
	}
}

// fenced is a fenced code block of a markdown page: its info string and
// its lines without the final newline.
type fenced struct{ info, body string }

func fencedBlocks(md string) []fenced {
	var out []fenced
	var cur *fenced
	var lines []string
	for _, line := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur, lines = &fenced{info: strings.TrimPrefix(line, "```")}, nil
		case cur != nil && line == "```":
			cur.body = strings.Join(lines, "\n")
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			lines = append(lines, line)
		}
	}
	return out
}
