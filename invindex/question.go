package invindex

import (
	"slices"
	"strings"
)

// questionWords are the scaffolding of an English question: interrogatives
// and the auxiliaries and modals that form questions ("When did ...",
// "What has ...", "How could ..."). They say what kind of answer is wanted,
// not what it is about, and they match other questions rather than the
// statements that answer them. Lucene's English stop set keeps them, since
// it is made for documents.
var questionWords = func() map[string]bool {
	set := map[string]bool{}
	for _, t := range Analyze(strings.Join([]string{"what", "when", "where", "who", "whom", "whose", "which", "why", "how",
		"do", "does", "did", "has", "have", "would", "could", "can"}, " "), nil) {
		set[t] = true
	}
	return set
}()

// AnalyzeQuestion is Analyze for a query that may be a question: it drops
// the question's scaffolding (questionWords), unless nothing else is left.
// Measured on LoCoMo's questions (docs/benchmarks.md): evidence recall of
// context packs at 2,048 tokens 0.712 -> 0.722.
func AnalyzeQuestion(query string) []string {
	terms := Analyze(query, nil)
	kept := slices.DeleteFunc(slices.Clone(terms), func(t string) bool { return questionWords[t] })
	if len(kept) == 0 {
		return terms
	}
	return kept
}
