package invindex

// englishStopWords is Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET, the stop
// list Anserini's BM25 baselines use. It is deliberately short: BM25's IDF
// already discounts common words, and a longer list would drop terms that
// matter in queries ("not", "no" are in it; "against", "without" are not).
var englishStopWords = [...]string{
	"a", "an", "and", "are", "as", "at", "be", "but", "by",
	"for", "if", "in", "into", "is", "it",
	"no", "not", "of", "on", "or", "such",
	"that", "the", "their", "then", "there", "these", "they", "this", "to",
	"was", "will", "with",
}

// IsStopWord reports whether a lowercased token is one of the 33 stop words.
func IsStopWord(w string) bool {
	return isStopWord(w)
}

// isStopBytes is IsStopWord for a term being built in a byte buffer.
func isStopBytes(b []byte) bool {
	return isStopWord(b)
}

// isStopWord dispatches on length and first byte so that a lookup costs a
// couple of comparisons; it is called for every token analyzed. It is
// generic so that byte buffers are compared without converting them to
// strings.
func isStopWord[T string | []byte](w T) bool {
	switch len(w) {
	case 1:
		return string(w) == "a"
	case 2:
		switch w[0] {
		case 'a':
			return string(w) == "an" || string(w) == "as" || string(w) == "at"
		case 'b':
			return string(w) == "be" || string(w) == "by"
		case 'i':
			return string(w) == "if" || string(w) == "in" || string(w) == "is" || string(w) == "it"
		case 'n':
			return string(w) == "no"
		case 'o':
			return string(w) == "of" || string(w) == "on" || string(w) == "or"
		case 't':
			return string(w) == "to"
		}
	case 3:
		switch w[0] {
		case 'a':
			return string(w) == "and" || string(w) == "are"
		case 'b':
			return string(w) == "but"
		case 'f':
			return string(w) == "for"
		case 'n':
			return string(w) == "not"
		case 't':
			return string(w) == "the"
		case 'w':
			return string(w) == "was"
		}
	case 4:
		switch w[0] {
		case 'i':
			return string(w) == "into"
		case 's':
			return string(w) == "such"
		case 't':
			return string(w) == "that" || string(w) == "then" || string(w) == "they" || string(w) == "this"
		case 'w':
			return string(w) == "will" || string(w) == "with"
		}
	case 5:
		return string(w) == "their" || string(w) == "there" || string(w) == "these"
	}
	return false
}
