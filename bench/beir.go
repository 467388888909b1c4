package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// BEIRDoc is one corpus document of a BEIR data set.
type BEIRDoc struct {
	ID, Title, Text string
}

// BEIR is a BEIR data set: corpus, the queries that have judgements in the
// chosen split, and the judgements (query id -> doc id -> relevance grade).
type BEIR struct {
	Corpus  []BEIRDoc
	Queries []BEIRQuery
	Qrels   map[string]map[string]int
}

// BEIRQuery is one judged query.
type BEIRQuery struct {
	ID, Text string
}

// LoadBEIR reads corpus.jsonl, queries.jsonl and qrels/<split>.tsv from dir.
// Queries without judgements in the split are left out, as BEIR does.
func LoadBEIR(dir, split string) (*BEIR, error) {
	b := &BEIR{Qrels: map[string]map[string]int{}}
	if err := readJSONL(filepath.Join(dir, "corpus.jsonl"), func(line []byte) error {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		b.Corpus = append(b.Corpus, BEIRDoc{ID: d.ID, Title: d.Title, Text: d.Text})
		return nil
	}); err != nil {
		return nil, err
	}
	qf, err := os.Open(filepath.Join(dir, "qrels", split+".tsv"))
	if err != nil {
		return nil, err
	}
	defer qf.Close()
	sc := bufio.NewScanner(qf)
	for line := 0; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), "\t")
		if line == 0 && len(f) > 0 && f[0] == "query-id" {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("qrels line %d: want 3 tab-separated fields, got %d", line+1, len(f))
		}
		grade, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("qrels line %d: %w", line+1, err)
		}
		if b.Qrels[f[0]] == nil {
			b.Qrels[f[0]] = map[string]int{}
		}
		b.Qrels[f[0]][f[1]] = grade
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := readJSONL(filepath.Join(dir, "queries.jsonl"), func(line []byte) error {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		if _, judged := b.Qrels[q.ID]; judged {
			b.Queries = append(b.Queries, BEIRQuery{ID: q.ID, Text: q.Text})
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return b, nil
}

func readJSONL(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// NDCG is trec_eval's ndcg_cut at k (as pytrec_eval computes it for BEIR):
// gain = relevance grade, discount 1/log2(rank+1), normalised by the ideal
// ordering of the judged documents.
func NDCG(ranked []string, rel map[string]int, k int) float64 {
	var dcg float64
	for i, id := range ranked {
		if i >= k {
			break
		}
		if g := rel[id]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
	}
	var grades []int
	for _, g := range rel {
		if g > 0 {
			grades = append(grades, g)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(grades)))
	var ideal float64
	for i, g := range grades {
		if i >= k {
			break
		}
		ideal += float64(g) / math.Log2(float64(i+2))
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}

// Recall is the share of relevant documents (grade > 0) in the top k.
func Recall(ranked []string, rel map[string]int, k int) float64 {
	var relevant, found int
	for _, g := range rel {
		if g > 0 {
			relevant++
		}
	}
	if relevant == 0 {
		return 0
	}
	for i, id := range ranked {
		if i >= k {
			break
		}
		if rel[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(relevant)
}
