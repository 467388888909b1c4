package engine

import (
	"fmt"
	"strings"
	"testing"
)

// FirstSpan finds a span's artifact's first span, in the head and in a
// segment, among other artifacts' spans.
func TestViewFirstSpan(t *testing.T) {
	db := openTest(t, t.TempDir(), Options{DisableBackground: true})
	defer db.Close()
	long := func(tag string) string {
		var b strings.Builder
		for i := range 400 {
			fmt.Fprintf(&b, "Sentence %d of the %s turn says something about the deploy. ", i, tag)
		}
		return b.String()
	}
	mustIngest(t, db, "t", chat("ws", "a short turn before"))
	for _, tag := range []string{"first", "second"} {
		mustIngest(t, db, "t", chat("ws", long(tag)))
	}
	check := func(layout string) {
		t.Helper()
		later := 0
		err := db.View("t", "ws", func(v *View) error {
			for part := range v.LexicalParts() {
				for doc := range uint32(v.NumDocs(part)) {
					sp, _, _, err := v.Doc(part, doc, nil)
					if err != nil {
						return err
					}
					first, err := v.FirstSpan(part, doc, sp)
					if err != nil {
						return err
					}
					if first.ArtifactID != sp.ArtifactID || first.Ordinal != 0 || first.Start != 0 {
						t.Errorf("%s: span %d of %s: first span %d of %s at %d", layout, sp.Ordinal, sp.ArtifactID, first.Ordinal, first.ArtifactID, first.Start)
					}
					if sp.Ordinal > 0 {
						later++
						if !strings.HasPrefix(first.Text, "user: ") {
							t.Errorf("%s: first span %q does not start the turn", layout, first.Text[:20])
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if later < 4 {
			t.Fatalf("%s: %d later spans, want the long turns split", layout, later)
		}
	}
	check("head")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("segment")
}
