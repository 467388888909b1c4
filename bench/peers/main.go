// Command peers runs Loci and its peers on the same documents and queries,
// interleaved in one run, and prints one table (issue 25 §3):
//
//   - BM25 top-100: Loci's engine in-process against tantivy in-process
//     (the Python binding; timed around searcher.search);
//   - semantic top-100: Loci's exact int8 scan in-process against pgvector's
//     HNSW index over loopback, at recall@100 against the exact float scan
//     no lower than Loci's;
//   - durable ingest: Loci over HTTP with the built-in encoder on (and, as
//     loci serve runs by default, with late interaction's token rows too)
//     against PostgreSQL (fsync and synchronous_commit on) and SQLite (WAL,
//     synchronous=FULL), the same artifacts in batches of the same size.
//
// It is a module of its own (bench/peers/go.mod) so that the peers' code
// never enters the product binary or the main module's dependencies, and it
// is not part of CI: it needs bench/peers/setup.sh's venv and server, and
// minutes of both cores. README.md says how to run it.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	cfg := config{}
	flag.StringVar(&cfg.data, "data", "../shared/data", "shared data sets (real texts and questions)")
	flag.StringVar(&cfg.python, "python", "/tmp/peervenv/bin/python", "python of the venv that setup.sh makes")
	flag.StringVar(&cfg.dsn, "dsn", "host=127.0.0.1 port=54329 user=postgres dbname=postgres", "PostgreSQL (with pgvector) that setup.sh starts")
	flag.StringVar(&cfg.tmp, "tmp", os.TempDir(), "directory for the exchanged files, Loci's data directories and the SQLite database")
	flag.StringVar(&cfg.what, "run", "lexical,semantic,ingest", "comparisons to run, comma separated: lexical | semantic | ingest")
	flag.StringVar(&cfg.lexSpans, "lexical-spans", "100000", "workspace sizes (spans) of the BM25 comparison, comma separated")
	flag.IntVar(&cfg.vecSpans, "semantic-spans", 100000, "spans (each its own vector) of the semantic comparison")
	flag.IntVar(&cfg.queries, "queries", 1000, "timed queries per figure")
	flag.StringVar(&cfg.efs, "ef-search", "100,200,300,400,600,800", "pgvector hnsw.ef_search values tried, the smallest whose recall@100 reaches Loci's is timed")
	flag.StringVar(&cfg.export, "semantic-export", "", "a `loci embed` output (JSON Lines with span vectors): the semantic comparison takes the first -semantic-spans span vectors from it, all real, instead of deriving vectors past -vectors' texts")
	flag.BoolVar(&cfg.pgReuse, "pg-reuse", false, "keep the pgvector table and HNSW index an earlier semantic run left when they hold the same vectors (checked: row count, index, sample rows) instead of loading and building again")
	flag.StringVar(&cfg.vectors, "vectors", filepath.Join(os.TempDir(), "ivf-corpus-all.bin"), "minilm vectors of the shared texts and questions, as `loci bench ivf --texts 0 --cache FILE` writes them")
	flag.IntVar(&cfg.ingestN, "ingest-artifacts", 20000, "artifacts per ingest run")
	flag.IntVar(&cfg.ingestBatch, "ingest-batch", 100, "artifacts per request / transaction")
	flag.IntVar(&cfg.lociWriters, "loci-writers", 64, "Loci's concurrent HTTP clients")
	flag.IntVar(&cfg.pgWriters, "pg-writers", 64, "PostgreSQL's concurrent connections")
	flag.IntVar(&cfg.rounds, "ingest-rounds", 2, "ingest runs of each system, interleaved")
	flag.Uint64Var(&cfg.seed, "seed", 1, "corpus order and query sample")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

type config struct {
	data, python, dsn, tmp, what, lexSpans, efs, vectors, export string
	vecSpans, queries, ingestN, ingestBatch                      int
	lociWriters, pgWriters, rounds                               int
	seed                                                         uint64
	pgReuse                                                      bool
}

// row is one line of the final table.
type row struct {
	what, system, figure, note string
}

func run(cfg config) error {
	p, err := startPeer(cfg.python)
	if err != nil {
		return err
	}
	defer p.close()
	var rows []row
	fmt.Fprintf(os.Stderr, "peers: %s, %d CPUs, load %s\n", time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), loadAvg())
	for _, what := range strings.Split(cfg.what, ",") {
		var rs []row
		switch strings.TrimSpace(what) {
		case "lexical":
			sizes, err := ints(cfg.lexSpans)
			if err != nil {
				return err
			}
			for _, n := range sizes {
				if rs, err = lexical(cfg, p, n); err != nil {
					return err
				}
				rows = append(rows, rs...)
			}
			continue
		case "semantic":
			rs, err = semantic(cfg, p)
		case "ingest":
			rs, err = ingest(cfg, p)
		default:
			return fmt.Errorf("-run: unknown comparison %q", what)
		}
		if err != nil {
			return err
		}
		rows = append(rows, rs...)
	}
	fmt.Printf("\nPeers side by side, %s, %d CPUs (%s), load average at the end %s\n\n", time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), cpuModel(), loadAvg())
	fmt.Println("| comparison | system | figure | notes |")
	fmt.Println("|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s |\n", r.what, r.system, r.figure, r.note)
	}
	return nil
}

// peer is the Python worker (peer.py): one JSON request a line in, one
// reply a line out.
type peer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startPeer(python string) (*peer, error) {
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.Command(python, filepath.Join(filepath.Dir(self), "peer.py"))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the peer worker (run bench/peers/setup.sh first): %w", err)
	}
	return &peer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// call sends req and decodes the reply into resp.
func (p *peer) call(req map[string]any, resp any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return err
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("peer worker: %v: %w", req["op"], err)
	}
	var e struct{ Error string }
	if json.Unmarshal(line, &e) == nil && e.Error != "" {
		return fmt.Errorf("peer worker: %s", e.Error)
	}
	return json.Unmarshal(line, resp)
}

func (p *peer) close() {
	p.in.Close()
	p.cmd.Wait()
}

// dist is a latency distribution.
type dist []time.Duration

func (d dist) q(f float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[int(f*float64(len(s)-1))].Nanoseconds()) / 1e6
}

func (d dist) String() string {
	return fmt.Sprintf("p50 %.3f ms, p99 %.3f ms", d.q(0.5), d.q(0.99))
}

// interleaved runs a then b for an even i, b then a for an odd one, so that
// neither side always finds the caches warm or the machine's load just
// changed.
func interleaved(i int, a, b func() error) error {
	if i%2 == 1 {
		a, b = b, a
	}
	if err := a(); err != nil {
		return err
	}
	return b()
}

// writeFile writes path through a buffered writer that fill fills.
func writeFile(path string, fill func(w *bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := errors.Join(fill(w), w.Flush()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			_, v, _ := strings.Cut(l, ":")
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
