// Package bench holds Loci's end-to-end benchmarks and evaluations, run by
// `loci bench` and `loci eval`. Every data set it builds is deterministic: the
// same flags give the same artifacts.
package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/wal"
)

// words is a small vocabulary for synthetic text: the generator needs text
// that tokenizes and chunks like prose, not a language model.
var words = strings.Fields(`the a to of and in is it you that for on was with he as
have be at one this from by hot but what some we can out other were all there when up use
your how said an each she which do their time if will way about many then them write would
like so these her long make thing see him two has look more day could go come did number sound
no most people my over know water than call first who may down side been now find any new work
part take get place made live where after back little only round man year came show every good
me give our under name very through just form sentence great think say help low line differ turn
cause much mean before move right boy old too same tell does set three want air well also play
small end put home read hand port large spell add even land here must big high such follow act
why ask men change went light kind off need house picture try us again animal point mother world
near build self earth father head stand own page should country found answer school grow study
still learn plant cover food sun four between state keep eye never last let thought city tree
cross farm hard start might story saw far sea draw left late run while press close night real
life few north open seem together next white children begin got walk example ease paper group
always music those both mark often letter until mile river car feet care second book carry took
science eat room friend began idea fish mountain stop once base hear horse cut sure watch color
face wood main enough plain girl usual young ready above ever red list though feel talk bird soon
body dog family direct pose leave song measure door product black short numeral class wind question
happen complete ship area half rock order fire south problem piece told knew pass since top whole
king space heard best hour better true during hundred five remember step early hold west ground
interest reach fast verb sing listen six table travel less morning ten simple several vowel toward
war lay against pattern slow center love person money serve appear road map rain rule govern pull
cold notice voice unit power town fine certain fly fall lead cry dark machine note wait plan figure
star box noun field rest correct able pound done beauty drive stood contain front teach week final
gave green quick develop ocean warm free minute strong special mind behind clear tail produce fact
flight booking refund baggage invoice deploy database latency cluster incident budget meeting`)

// Corpus generates artifacts deterministically from a seed.
type Corpus struct {
	rng  *rand.Rand
	base time.Time
	n    int
}

// NewCorpus returns a generator; the same seed gives the same sequence.
func NewCorpus(seed uint64) *Corpus {
	return &Corpus{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), base: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *Corpus) sentence() string {
	n := 6 + c.rng.IntN(18)
	var b strings.Builder
	for i := 0; i < n; i++ {
		w := words[c.rng.IntN(len(words))]
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		if c.rng.IntN(40) == 0 {
			fmt.Fprintf(&b, " %d", c.rng.IntN(10000))
		}
	}
	b.WriteByte('.')
	return b.String()
}

func (c *Corpus) paragraph(sentences int) string {
	parts := make([]string, sentences)
	for i := range parts {
		parts[i] = c.sentence()
	}
	return strings.Join(parts, " ")
}

// Next returns the next artifact for workspace ws: 70% chat turns (one to
// four sentences), 20% tool results (JSON, ~1 KB), 10% documents (~4 KB).
func (c *Corpus) Next(ws string) engine.IngestInput {
	c.n++
	in := engine.IngestInput{
		Workspace: ws, ActorID: fmt.Sprintf("agent-%d", c.rng.IntN(4)),
		Timestamp: c.base.Add(time.Duration(c.n) * time.Second),
		SessionID: fmt.Sprintf("s-%d", c.n/50),
	}
	var payload any
	switch r := c.rng.IntN(10); {
	case r < 7:
		in.Type = "chat_turn"
		role := "user"
		if c.n%2 == 0 {
			role = "assistant"
		}
		payload = map[string]string{"role": role, "content": c.paragraph(1 + c.rng.IntN(4))}
	case r < 9:
		in.Type = "tool_result"
		rows := make([]map[string]any, 4+c.rng.IntN(6))
		for i := range rows {
			rows[i] = map[string]any{"id": c.rng.IntN(1 << 20), "status": words[c.rng.IntN(len(words))], "note": c.sentence()}
		}
		payload = map[string]any{"tool_name": "search_records", "result": rows}
	default:
		in.Type = "document"
		payload = map[string]string{"title": c.sentence(), "content": c.paragraph(30 + c.rng.IntN(20))}
	}
	in.Payload, _ = json.Marshal(payload)
	return in
}

// scratchEngine opens an engine in a new temporary directory for a
// benchmark or evaluation (fsync off: the figures are about reads; emb
// embeds inline), and returns a cleanup that closes it and
// removes the directory.
func scratchEngine(prefix string, emb embed.Embedder) (*engine.DB, func(), error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, nil, err
	}
	db, err := engine.Open(dir, engine.Options{Sync: wal.SyncOff, DisableBackground: true, Embedder: emb})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }, nil
}
