package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loci-memory/loci/bench"
	"github.com/loci-memory/loci/embed/colbert"
	"github.com/loci-memory/loci/embed/minilm"
	"github.com/loci-memory/loci/wal"
)

// ingest compares durable ingest: `loci bench ingest --http --embedder
// minilm` (POST /v2/ingest on loopback, each response durable, the encoder
// embedding in the background) against PostgreSQL and SQLite storing the
// same artifacts (bench.Corpus with the same seed, in the same batches and
// workspaces), rounds times each, interleaved.
func ingest(cfg config, p *peer) ([]row, error) {
	mini, err := minilm.Default()
	if err != nil {
		return nil, err
	}
	file := filepath.Join(cfg.tmp, "peers-ingest.jsonl")
	if err := writeBatches(file, cfg.seed, cfg.ingestN, cfg.ingestBatch); err != nil {
		return nil, err
	}
	defer os.Remove(file)
	sqlitePath := filepath.Join(cfg.tmp, "peers-ingest.sqlite")
	defer func() {
		for _, s := range []string{"", "-wal", "-shm"} {
			os.Remove(sqlitePath + s)
		}
	}()
	type peerIngest struct {
		Artifacts         int
		Seconds           float64
		Fsync             string
		SynchronousCommit string `json:"synchronous_commit"`
		JournalMode       string `json:"journal_mode"`
		Synchronous       int
		SQLite            string
	}
	var pgSet, liteSet peerIngest // the settings each peer reported
	col, err := colbert.Default()
	if err != nil {
		return nil, err
	}
	loci := func(emb bench.Embedding, rows bool) func() (float64, error) {
		return func() (float64, error) {
			if rows { // the token rows' worker, as loci serve runs it by default
				bench.EvalLateInteraction.Rows, bench.EvalLateInteraction.MaxSpans = colbert.NewRows(col), lociLateMaxSpans
				defer func() { bench.EvalLateInteraction.Rows, bench.EvalLateInteraction.MaxSpans = nil, 0 }()
			}
			r, err := bench.IngestHTTP(bench.IngestHTTPConfig{Artifacts: cfg.ingestN, Batch: cfg.ingestBatch, Writers: cfg.lociWriters,
				Seed: cfg.seed, Sync: wal.SyncAlways, Embedding: emb})
			if err != nil {
				return 0, err
			}
			return r.ArtifactsPerS, nil
		}
	}
	pg := func(fts bool) func() (float64, error) {
		return func() (float64, error) {
			err := p.call(map[string]any{"op": "pg_ingest", "dsn": cfg.dsn, "file": file, "writers": cfg.pgWriters, "fts": fts}, &pgSet)
			return float64(pgSet.Artifacts) / pgSet.Seconds, err
		}
	}
	lite := func(fts bool) func() (float64, error) {
		return func() (float64, error) {
			err := p.call(map[string]any{"op": "sqlite_ingest", "path": sqlitePath, "file": file, "fts": fts}, &liteSet)
			return float64(liteSet.Artifacts) / liteSet.Seconds, err
		}
	}
	// kind: what a row is compared as. The target compares Loci with the
	// peers storing rows with no index (their fastest setting); the peers
	// that index the payload's words at commit, as Loci does before it
	// acknowledges, are the like-for-like context.
	const (
		lociRow = iota
		plainPeer
		indexedPeer
	)
	systems := []struct {
		name  string
		run   func() (float64, error)
		kind  int
		ratio bool // its note gives best Loci / best peer
	}{
		{"Loci, encoder on", loci(bench.Embedding{Embedder: mini}, false), lociRow, true},
		{"PostgreSQL", pg(false), plainPeer, false},
		{"SQLite", lite(false), plainPeer, false},
		// For the record, not the target: where the time goes.
		{"Loci, encoder off", loci(bench.Embedding{}, false), lociRow, false},
		{"Loci, encoder and token rows on", loci(bench.Embedding{Embedder: mini}, true), lociRow, true},
		{"PostgreSQL, full-text index", pg(true), indexedPeer, false},
		{"SQLite, FTS5 index", lite(true), indexedPeer, false},
	}
	rates := make([][]float64, len(systems))
	for round := range cfg.rounds {
		for k := range systems {
			i := (k + round) % len(systems) // a different one goes first each round
			logf("ingest round %d: %s, %d artifacts (load %s)", round+1, systems[i].name, cfg.ingestN, loadAvg())
			r, err := systems[i].run()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", systems[i].name, err)
			}
			logf("ingest round %d: %s %.0f artifacts/s", round+1, systems[i].name, r)
			rates[i] = append(rates[i], r)
		}
	}
	what := fmt.Sprintf("durable ingest, %d artifacts in batches of %d, %d rounds interleaved", cfg.ingestN, cfg.ingestBatch, cfg.rounds)
	notes := []string{
		fmt.Sprintf("POST /v2/ingest from %d keep-alive clients, WAL fsync always, minilm embedding in the background (acknowledgements do not wait for it), lexical index synchronous", cfg.lociWriters),
		fmt.Sprintf("one INSERT transaction per batch from %d connections (psycopg executemany), fsync %s, synchronous_commit %s; table with a bigserial key and jsonb payload, no other index",
			cfg.pgWriters, pgSet.Fsync, pgSet.SynchronousCommit),
		fmt.Sprintf("SQLite %s: one INSERT transaction per batch, one connection (Python sqlite3), journal_mode %s, synchronous %d (FULL); no index",
			liteSet.SQLite, liteSet.JournalMode, liteSet.Synchronous),
		"as the first row with the server's embedder off (lexically indexed ingest only)",
		fmt.Sprintf("as the first row with late interaction's token rows computed in the background too, as loci serve does by default (workspaces of at most %d spans); acknowledgements wait for neither", lociLateMaxSpans),
		"as PostgreSQL above, with a stored tsvector column (jsonb_to_tsvector('english', payload, '[\"string\"]')) in a GIN index, maintained at commit as Loci's lexical index is",
		"as SQLite above, with an external-content FTS5 table over the payload (tokenize 'porter unicode61') kept by an insert trigger, maintained at commit as Loci's lexical index is",
	}
	var rows []row
	best := map[int]float64{}
	for i, s := range systems {
		best[s.kind] = max(best[s.kind], maxOf(rates[i]))
	}
	for i, s := range systems {
		fig := fmt.Sprintf("%s artifacts/s (best %.0f)", fmtRates(rates[i]), maxOf(rates[i]))
		note := notes[i]
		if s.ratio {
			note += fmt.Sprintf("; best Loci / best peer %.2f (against the peers with a lexical index: %.2f)",
				maxOf(rates[i])/best[plainPeer], maxOf(rates[i])/best[indexedPeer])
		}
		rows = append(rows, row{what, s.name, fig, note})
	}
	return rows, nil
}

// lociLateMaxSpans is loci serve's default --late-max-spans (cmd/loci's
// defaultLateMaxSpans, which this module cannot import): the workspaces
// whose spans get token rows.
const lociLateMaxSpans = 10_000

// writeBatches writes the request bodies `loci bench ingest --http` sends
// (bench.IngestHTTP: bench.Corpus(seed), workspace ws-<request % 8>), one
// batch a line, for the peers.
func writeBatches(path string, seed uint64, n, batch int) error {
	corpus := bench.NewCorpus(seed)
	return writeFile(path, func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		for done, req := 0, 0; done < n; done, req = done+batch, req+1 {
			ws := fmt.Sprintf("ws-%d", req%8)
			items := make([]map[string]any, min(batch, n-done))
			for i := range items {
				in := corpus.Next(ws)
				items[i] = map[string]any{"artifact_type": in.Type, "raw_payload": json.RawMessage(in.Payload),
					"timestamp": in.Timestamp.UTC().Format(time.RFC3339Nano), "session_id": in.SessionID}
			}
			if err := enc.Encode(map[string]any{"workspace": ws, "artifacts": items}); err != nil {
				return err
			}
		}
		return nil
	})
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func fmtRates(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, " / ")
}
