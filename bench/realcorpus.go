package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/loci-memory/loci/engine"
)

// RealCorpus cycles through the texts of the shared public data sets
// (SciFact abstracts, LoCoMo turns, HotpotQA paragraphs, τ-bench messages),
// reshuffled with a seed on every round, so a workspace of any size has the
// term statistics of real text. Queries are the data sets' real questions.
type RealCorpus struct {
	docs    []realDoc
	Queries []string
	// Sources[i] names the data set Queries[i] comes from: "scifact",
	// "locomo" or "hotpotqa".
	Sources []string
	rng     *rand.Rand
	order   []int
	pos     int
	round   int
	base    time.Time
	n       int
}

type realDoc struct {
	typ     string
	payload []byte
}

// LoadRealCorpus reads the shared data sets under dir (../shared/data).
func LoadRealCorpus(dir string, seed uint64) (*RealCorpus, error) {
	c := &RealCorpus{rng: rand.New(rand.NewPCG(seed, 17)), base: time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)}
	add := func(typ string, v any) {
		b, _ := json.Marshal(v)
		c.docs = append(c.docs, realDoc{typ, b})
	}
	sf, err := LoadBEIR(filepath.Join(dir, "scifact"), "test")
	if err != nil {
		return nil, err
	}
	for _, d := range sf.Corpus {
		add("document", map[string]string{"title": d.Title, "content": d.Text})
	}
	for _, q := range sf.Queries {
		c.Queries, c.Sources = append(c.Queries, q.Text), append(c.Sources, "scifact")
	}
	var locomo []struct {
		QA []struct {
			Question string `json:"question"`
		} `json:"qa"`
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	if err := readJSON(filepath.Join(dir, "locomo", "locomo-dev.json"), &locomo); err != nil {
		return nil, err
	}
	for _, conv := range locomo {
		keys := make([]string, 0, len(conv.Conversation))
		for k := range conv.Conversation {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var turns []struct {
				Speaker string `json:"speaker"`
				Text    string `json:"text"`
			}
			if json.Unmarshal(conv.Conversation[k], &turns) != nil {
				continue // speaker names and session dates are strings
			}
			for _, t := range turns {
				add("chat_turn", map[string]string{"role": t.Speaker, "content": t.Text})
			}
		}
		for _, q := range conv.QA {
			c.Queries, c.Sources = append(c.Queries, q.Question), append(c.Sources, "locomo")
		}
	}
	var hotpotCorpus map[string][]string
	if err := readJSON(filepath.Join(dir, "hotpotqa", "hotpotqa_train_corpus.json"), &hotpotCorpus); err != nil {
		return nil, err
	}
	titles := make([]string, 0, len(hotpotCorpus))
	for t := range hotpotCorpus {
		titles = append(titles, t)
	}
	sort.Strings(titles)
	for _, t := range titles {
		add("document", map[string]string{"title": t, "content": strings.Join(hotpotCorpus[t], " ")})
	}
	var hotpot []struct {
		Question string `json:"question"`
	}
	if err := readJSON(filepath.Join(dir, "hotpotqa", "hotpotqa_train.json"), &hotpot); err != nil {
		return nil, err
	}
	for _, q := range hotpot {
		c.Queries, c.Sources = append(c.Queries, q.Question), append(c.Sources, "hotpotqa")
	}
	var tau []struct {
		Traj []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"traj"`
	}
	if err := readJSON(filepath.Join(dir, "tau-bench", "gpt-4o-airline.json"), &tau); err != nil {
		return nil, err
	}
	for _, ep := range tau {
		for _, m := range ep.Traj {
			var s string
			if json.Unmarshal(m.Content, &s) == nil && strings.TrimSpace(s) != "" {
				typ := "chat_turn"
				if m.Role == "tool" {
					typ = "tool_result"
				}
				add(typ, map[string]string{"role": m.Role, "content": s})
			}
		}
	}
	if len(c.docs) == 0 {
		return nil, fmt.Errorf("no texts found under %s", dir)
	}
	return c, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Texts is the number of distinct texts the corpus cycles through.
func (c *RealCorpus) Texts() int { return len(c.docs) }

// Next returns the next artifact for workspace ws; each round through the
// texts uses a new seeded order and a new session id.
func (c *RealCorpus) Next(ws string) engine.IngestInput {
	if c.pos == len(c.order) {
		c.order = c.rng.Perm(len(c.docs))
		c.pos = 0
		c.round++
	}
	d := c.docs[c.order[c.pos]]
	c.pos++
	c.n++
	return engine.IngestInput{Workspace: ws, ActorID: "agent", Type: d.typ, Payload: d.payload,
		Timestamp: c.base.Add(time.Duration(c.n) * time.Minute), SessionID: fmt.Sprintf("round-%d", c.round)}
}
