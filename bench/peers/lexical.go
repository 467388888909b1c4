package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/bench"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/wal"
)

// lexical compares BM25 top-100 at spans spans: the workspace `loci bench
// search` builds (the shared data sets' real texts, repeated in seeded
// orders), whose spans (Loci's units of retrieval) are then written out and
// indexed by tantivy as one document each, so both rank the same units.
func lexical(cfg config, p *peer, spans int) ([]row, error) {
	dir, err := os.MkdirTemp(cfg.tmp, "peers-lexical-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	db, err := engine.Open(filepath.Join(dir, "loci"), engine.Options{Sync: wal.SyncOff, DisableBackground: true, NoEmbedder: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rc, err := bench.LoadRealCorpus(cfg.data, cfg.seed)
	if err != nil {
		return nil, err
	}
	logf("lexical %d: building Loci's workspace", spans)
	var arts []uuid.UUID
	for n := 0; n < spans; {
		batch := make([]engine.IngestInput, 256)
		for i := range batch {
			batch[i] = rc.Next("bench")
		}
		rs, err := db.IngestBatch("bench", batch)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			arts = append(arts, r.ArtifactID)
			n += len(r.SpanIDs)
		}
	}
	if err := db.Compact(); err != nil {
		return nil, err
	}
	logf("lexical %d: writing %d artifacts' spans for tantivy", spans, len(arts))
	docs := filepath.Join(dir, "spans.jsonl")
	ids, keys, err := writeSpans(db, arts, docs)
	if err != nil {
		return nil, err
	}
	var ix struct {
		Docs    int
		Seconds float64
	}
	if err := p.call(map[string]any{"op": "tantivy_index", "docs": docs}, &ix); err != nil {
		return nil, err
	}
	logf("lexical %d: tantivy indexed %d documents in %.1f s", spans, ix.Docs, ix.Seconds)
	os.Remove(docs)

	rng := rand.New(rand.NewPCG(cfg.seed, 99))
	var queries []string
	for len(queries) < cfg.queries {
		q := rc.Queries[rng.IntN(len(rc.Queries))]
		if len(invindex.Analyze(q, nil)) > 0 {
			queries = append(queries, q)
		}
	}
	type tantivyReply struct {
		ParseNs int64 `json:"parse_ns"`
		Ns      int64
		IDs     []int
	}
	loci := func(q string) ([]engine.SearchHit, time.Duration, error) {
		t := time.Now()
		hits, err := db.SearchLexical("bench", "bench", q, 100)
		return hits, time.Since(t), err
	}
	tantivy := func(q string, withIDs bool) (tantivyReply, error) {
		var r tantivyReply
		err := p.call(map[string]any{"op": "tantivy_search", "q": q, "k": 100, "ids": withIDs}, &r)
		return r, err
	}
	// Warm both (page cache, allocators, JIT-free but lazy structures).
	for _, q := range queries[:min(100, len(queries))] {
		if _, _, err := loci(q); err != nil {
			return nil, err
		}
		if _, err := tantivy(q, false); err != nil {
			return nil, err
		}
	}
	var lociLat, tanLat, tanParse dist
	overlap, overlap10, counted := 0.0, 0.0, 0
	for i, q := range queries {
		var hits []engine.SearchHit
		var d time.Duration
		var tr tantivyReply
		withIDs := i%10 == 0 // result sets compared on every 10th query
		err := interleaved(i, func() (err error) {
			hits, d, err = loci(q)
			return err
		}, func() (err error) {
			tr, err = tantivy(q, withIDs)
			return err
		})
		if err != nil {
			return nil, err
		}
		lociLat = append(lociLat, d)
		tanLat = append(tanLat, time.Duration(tr.Ns))
		tanParse = append(tanParse, time.Duration(tr.Ns+tr.ParseNs))
		if withIDs && len(hits) > 0 {
			o, o10 := overlapOf(hits, ids, keys, tr.IDs)
			overlap += o
			overlap10 += o10
			counted++
		}
	}
	what := fmt.Sprintf("BM25 top-100, %d spans (%d artifacts), %d queries", len(ids), len(arts), len(queries))
	return []row{
		{what, "Loci engine (in-process, SearchLexical)", lociLat.String(), "Lucene English analysis (33 stop words, Porter), BM25 k1 0.9 b 0.4"},
		{what, "tantivy 0.27 (Python, in-process, searcher.search)", tanLat.String(),
			fmt.Sprintf("same analysis but Snowball English stemmer, BM25 k1 1.2 b 0.75; parse + search %s; top-100 overlap with Loci %.2f (top-10 %.2f) over %d queries",
				tanParse, overlap/float64(counted), overlap10/float64(counted), counted)},
	}, nil
}

// writeSpans writes the spans of arts as JSON lines {"id", "text"} and
// returns the integer id of each span, and a hash of each id's text.
func writeSpans(db *engine.DB, arts []uuid.UUID, path string) (map[uuid.UUID]int, []uint64, error) {
	ids := make(map[uuid.UUID]int, len(arts))
	var keys []uint64
	err := writeFile(path, func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		for _, a := range arts {
			spans, err := db.ArtifactSpans("bench", a)
			if err != nil {
				return err
			}
			for _, sp := range spans {
				if _, dup := ids[sp.ID]; dup {
					continue
				}
				ids[sp.ID] = len(ids)
				h := fnv.New64a()
				h.Write([]byte(sp.Text))
				keys = append(keys, h.Sum64())
				if err := enc.Encode(map[string]any{"id": ids[sp.ID], "text": sp.Text}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return ids, keys, err
}

// overlapOf is the share of Loci's top 100 (and top 10) that the peer's
// result list also holds in its top 100 (10), compared by text: the corpus
// repeats its texts, and which copy of a tie each engine returns first is
// arbitrary.
func overlapOf(hits []engine.SearchHit, ids map[uuid.UUID]int, keys []uint64, peer []int) (top100, top10 float64) {
	share := func(n int) float64 {
		in := map[uint64]int{}
		for _, id := range peer[:min(n, len(peer))] {
			in[keys[id]]++
		}
		both := 0
		for _, h := range hits[:min(n, len(hits))] {
			if k := keys[ids[h.SpanID]]; in[k] > 0 {
				in[k]--
				both++
			}
		}
		return float64(both) / float64(min(n, len(hits)))
	}
	return share(100), share(10)
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "peers %s: "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, a...)...)
}
