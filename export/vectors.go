package export

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/text"
)

// EncodeVector is a span vector as an artifact line's `vectors` carries it:
// standard base64 (padded) of its float32 values, 4 bytes each,
// little-endian IEEE 754. It keeps every bit of the embedder's output (a
// decimal text would have to round-trip), in 2,048 characters at 384
// dimensions.
func EncodeVector(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// DecodeVector reverses EncodeVector. Its dimension, finiteness and
// non-zeroness are the importing engine's to check
// (engine.ImportItem.Vectors).
func DecodeVector(s string) ([]float32, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not standard base64: %w", err)
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%d bytes, not a whole number of float32 values", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// EmbedSummary counts what Embed has written.
type EmbedSummary struct {
	Artifacts, Feedback, Spans int
}

// embedBatchTexts bounds the span texts handed to the embedder at once
// (the built-in encoder spreads them over every core).
const embedBatchTexts = 1024

// Embed copies the export r reads to w with every artifact's span vectors
// (`loci embed`), so that `loci import --vectors` stores them without
// embedding: the header names e's model and dimension (`embedder`,
// `embedder_dim`); each artifact line gets `vectors`, e's output for the
// texts its payload is cut into (engine.SpanTexts with counter, nil: the
// engine's default), replacing any it had, and its `content_hash` and
// `span_ids` (engine.SpanID of its id) when it has none; feedback and end
// lines are copied. A line that import would refuse for its shape (an id
// that is not a UUID, a hash that does not match the payload, span ids of
// another count, a missing time) is refused here too, naming it, and so is
// a vector the embedder gives that import would refuse. It needs no data
// directory; progress, if not nil, is called after each batch.
func Embed(ctx context.Context, r *Reader, w io.Writer, e embed.Embedder, counter text.TokenCounter, progress func(EmbedSummary)) (EmbedSummary, error) {
	var sum EmbedSummary
	if counter == nil {
		counter = text.O200kBase()
	}
	h, err := r.next()
	if err != nil {
		return sum, err
	}
	if h.Kind != "header" || h.Format != Format {
		return sum, fmt.Errorf("line 1 is not a %s header", Format)
	}
	if h.Version != Version {
		return sum, fmt.Errorf("export format version %d; this loci reads version %d", h.Version, Version)
	}
	h.Embedder, h.EmbedderDim = e.Model(), e.Dim()
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return sum, err
	}
	type pending struct {
		l     *line
		n     int // its line number
		texts []string
		err   error
	}
	var batch []pending
	texts := 0
	flush := func() error {
		workers := min(runtime.GOMAXPROCS(0), len(batch))
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < len(batch); i += workers {
					if batch[i].l.Kind == "artifact" {
						batch[i].texts, batch[i].err = embedReady(batch[i].l, counter)
					}
				}
			}(w)
		}
		wg.Wait()
		var all []string
		for _, p := range batch {
			if p.err != nil {
				return fmt.Errorf("line %d: %w", p.n, p.err)
			}
			all = append(all, p.texts...)
		}
		var vecs [][]float32
		if len(all) > 0 {
			var err error
			if vecs, err = e.Embed(ctx, all); err == nil && len(vecs) != len(all) {
				err = fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(all))
			}
			if err != nil {
				return fmt.Errorf("lines %d-%d: %w", batch[0].n, batch[len(batch)-1].n, err)
			}
		}
		for _, p := range batch {
			if p.l.Kind == "artifact" {
				p.l.Vectors = make([]string, len(p.texts))
				for i := range p.texts {
					if err := engine.CheckVector(vecs[i], e.Dim()); err != nil {
						// GloVe gives a zero vector to a text without a word it knows.
						return fmt.Errorf("line %d: artifact %s: the embedder's vector for span %d %w, which import --vectors refuses (import this file without vectors)",
							p.n, p.l.ArtifactID, i, err)
					}
					p.l.Vectors[i] = EncodeVector(vecs[i])
				}
				vecs = vecs[len(p.texts):]
				sum.Artifacts++
				sum.Spans += len(p.texts)
			} else {
				sum.Feedback++
			}
			if err := enc.Encode(p.l); err != nil {
				return err
			}
		}
		batch, texts = batch[:0], 0
		if progress != nil {
			progress(sum)
		}
		return nil
	}
	for {
		l, err := r.next()
		if err != nil {
			return sum, err
		}
		switch l.Kind {
		case "artifact", "feedback":
		case "end":
			if err := flush(); err != nil {
				return sum, err
			}
			if l.Artifacts == nil || l.Events == nil || *l.Artifacts != sum.Artifacts || *l.Events != sum.Feedback {
				return sum, fmt.Errorf("line %d: the end line counts do not match the %d artifacts and %d feedback events read", r.line, sum.Artifacts, sum.Feedback)
			}
			if err := enc.Encode(l); err != nil {
				return sum, err
			}
			if err := r.Trailing(); err != nil {
				return sum, err
			}
			return sum, bw.Flush()
		default:
			return sum, fmt.Errorf("line %d: unknown kind %q (want artifact, feedback or end)", r.line, l.Kind)
		}
		batch = append(batch, pending{l: l, n: r.line})
		// A payload's span count is known only once cut: bound the batch
		// by its payload bytes (about 4 bytes a token), then by artifacts.
		if l.RawPayloadJSON != nil {
			texts += 1 + len(*l.RawPayloadJSON)/(4*engine.SpanTargetTokens)
		}
		if texts >= embedBatchTexts || len(batch) >= embedBatchTexts {
			if err := flush(); err != nil {
				return sum, err
			}
		}
	}
}

// embedReady completes artifact line l with what import needs besides its
// vectors (its content hash and span ids when it has none), checks it as
// import decodes it, and returns its span texts.
func embedReady(l *line, counter text.TokenCounter) ([]string, error) {
	if l.ContentHash == "" {
		var payload []byte
		if l.RawPayloadJSON != nil {
			payload = []byte(*l.RawPayloadJSON)
		}
		h := artifact.ContentHash(payload)
		l.ContentHash = hex.EncodeToString(h[:])
	}
	it, _, err := importItem(l, false)
	if err != nil {
		return nil, err
	}
	a := it.Artifact
	if a.ID == (uuid.UUID{}) {
		return nil, fmt.Errorf("artifact_id is required")
	}
	if a.ContentHash != artifact.ContentHash(a.Payload) {
		return nil, fmt.Errorf("artifact %s: its raw payload does not match its content hash", a.ID)
	}
	texts, err := engine.SpanTexts(a, counter)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", a.ID, err)
	}
	switch {
	case len(l.SpanIDs) == 0:
		l.SpanIDs = make([]string, len(texts))
		for i := range texts {
			l.SpanIDs[i] = engine.SpanID(a.ID, uint32(i)).String()
		}
	case len(l.SpanIDs) != len(texts):
		return nil, fmt.Errorf("artifact %s: chunking gives %d spans, the line names %d span_ids", a.ID, len(texts), len(l.SpanIDs))
	}
	return texts, nil
}
