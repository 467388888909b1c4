package pack

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// PackHash returns "sha256:" and the hex SHA-256 of the canonical encoding
// of a pack: its context text and citations. The encoding is a sequence of
// netstrings ("<length in bytes, decimal>:<bytes>,"):
//
//	"loci-pack-v1"
//	the context text
//	the number of citations, decimal
//	then for each citation, in order, ten netstrings:
//	  index, artifact_id, span_id, start_offset, end_offset, content_hash,
//	  source_type, relevance_score, content_preview, pinned
//
// Integers are decimal without leading zeros ("-" for negatives), ids are
// lowercase hyphenated UUIDs, relevance_score is written with exactly six
// decimal places ("0.734512"), and pinned is "true" or "false".
func PackHash(contextText string, citations []Citation) string {
	h := sha256.New()
	var buf []byte
	put := func(s string) {
		buf = strconv.AppendInt(buf[:0], int64(len(s)), 10)
		buf = append(buf, ':')
		buf = append(buf, s...)
		buf = append(buf, ',')
		h.Write(buf)
	}
	put("loci-pack-v1")
	put(contextText)
	put(strconv.Itoa(len(citations)))
	for i := range citations {
		c := &citations[i]
		put(strconv.Itoa(c.Index))
		put(c.ArtifactID.String())
		put(c.SpanID.String())
		put(strconv.Itoa(c.StartOffset))
		put(strconv.Itoa(c.EndOffset))
		put(c.ContentHash)
		put(c.SourceType)
		put(strconv.FormatFloat(c.RelevanceScore, 'f', 6, 64))
		put(c.ContentPreview)
		put(strconv.FormatBool(c.Pinned))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
