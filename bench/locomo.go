package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/engine"
)

// LoCoMoConfig sets up `loci eval locomo`.
type LoCoMoConfig struct {
	Data    string // locomo-dev.json
	Budgets []int  // max_tokens values, e.g. 512,1024,2048,4096
}

// LoCoMoBudget is the outcome at one budget.
type LoCoMoBudget struct {
	Budget int `json:"budget"`
	// Evidence recall: the share of gold evidence turns cited in the pack.
	RecallCat1to4 float64            `json:"evidence_recall_cat1_4"`
	RecallByCat   map[string]float64 `json:"evidence_recall_by_category"`
	// Abstention rates: of category 5 (adversarial, unanswerable), of
	// categories 1-4, and per category.
	AbstainCat5  float64            `json:"abstain_rate_cat5"`
	AbstainOther float64            `json:"abstain_rate_cat1_4"`
	AbstainByCat map[string]float64 `json:"abstain_rate_by_category"`
	// Gold turns of categories 1-4 not cited, by the exclusion reason of
	// their most relevant span, or NOT_CANDIDATE when no channel returned
	// them.
	MissedCat1to4 map[string]int `json:"missed_gold_cat1_4"`
	MeanTokens    float64        `json:"mean_total_tokens"`
	P50ms         float64        `json:"pack_p50_ms"`
	P99ms         float64        `json:"pack_p99_ms"`
}

// LoCoMoResult is what `loci eval locomo --json` prints.
type LoCoMoResult struct {
	Conversations int            `json:"conversations"`
	Turns         int            `json:"turns"`
	Questions     int            `json:"questions"`
	Budgets       []LoCoMoBudget `json:"budgets"`
	Note          string         `json:"note"`
}

var diaIDPattern = regexp.MustCompile(`^D(\d+):(\d+)$`)

// locomoQA is one LoCoMo question.
type locomoQA struct {
	Question string   `json:"question"`
	Evidence []string `json:"evidence"`
	Category int      `json:"category"`
}

// locomoSet is the LoCoMo data ingested into a scratch engine: conversation
// ci is workspace "locomo-<ci>", and turnOf[ci] maps an artifact to its
// dialogue id.
type locomoSet struct {
	db      *engine.DB
	cleanup func()
	qa      [][]locomoQA
	turnOf  []map[uuid.UUID]string
	turns   int
}

// gold returns the well-formed gold evidence ids of a question (a few gold
// entries hold two ids separated by ";").
func (q *locomoQA) gold() []string {
	var out []string
	for _, ev := range q.Evidence {
		for _, id := range strings.Split(ev, ";") {
			if id = strings.TrimSpace(id); diaIDPattern.MatchString(id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// loadLoCoMo ingests every LoCoMo conversation into its own workspace of a
// scratch engine (each turn a chat_turn, idempotency key its dialogue id,
// timestamp its session's date-time plus its position in seconds).
func loadLoCoMo(path string) (*locomoSet, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var convs []struct {
		QA           []locomoQA                 `json:"qa"`
		Conversation map[string]json.RawMessage `json:"conversation"`
		SampleID     string                     `json:"sample_id"`
	}
	if err := json.Unmarshal(raw, &convs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	db, cleanup, err := scratchEngine("loci-eval-locomo-")
	if err != nil {
		return nil, err
	}
	set := &locomoSet{db: db, cleanup: cleanup, turnOf: make([]map[uuid.UUID]string, len(convs))}
	for ci, conv := range convs {
		set.qa = append(set.qa, conv.QA)
		ws := fmt.Sprintf("locomo-%d", ci)
		set.turnOf[ci] = map[uuid.UUID]string{}
		var sessions []int
		for key := range conv.Conversation {
			if n, ok := strings.CutPrefix(key, "session_"); ok && !strings.Contains(n, "_") {
				i, err := strconv.Atoi(n)
				if err == nil {
					sessions = append(sessions, i)
				}
			}
		}
		sort.Ints(sessions)
		for _, si := range sessions {
			var when string
			json.Unmarshal(conv.Conversation[fmt.Sprintf("session_%d_date_time", si)], &when)
			ts, err := time.Parse("3:04 pm on 2 January, 2006", when)
			if err != nil {
				cleanup()
				return nil, fmt.Errorf("conversation %d session %d: date %q: %w", ci, si, when, err)
			}
			var turns []struct {
				Speaker string `json:"speaker"`
				DiaID   string `json:"dia_id"`
				Text    string `json:"text"`
			}
			if err := json.Unmarshal(conv.Conversation[fmt.Sprintf("session_%d", si)], &turns); err != nil {
				cleanup()
				return nil, err
			}
			var ins []engine.IngestInput
			for ti, t := range turns {
				payload, _ := json.Marshal(map[string]string{"role": t.Speaker, "content": t.Text})
				ins = append(ins, engine.IngestInput{Workspace: ws, ActorID: t.Speaker, Type: "chat_turn", Payload: payload,
					IdempotencyKey: t.DiaID, SessionID: fmt.Sprintf("session_%d", si),
					Timestamp: ts.Add(time.Duration(ti) * time.Second)}) // turns keep their order within a session
			}
			rs, err := db.IngestBatch("eval", ins)
			if err != nil {
				cleanup()
				return nil, err
			}
			for i, r := range rs {
				set.turnOf[ci][r.ArtifactID] = ins[i].IdempotencyKey
			}
			set.turns += len(ins)
		}
	}
	if err := db.Compact(); err != nil {
		cleanup()
		return nil, err
	}
	return set, nil
}

// EvalLoCoMo ingests every LoCoMo conversation into its own workspace (see
// loadLoCoMo), asks every question as a v1 context pack query at each
// budget, and measures how many gold evidence turns the pack cites, and
// why the others were not.
func EvalLoCoMo(cfg LoCoMoConfig) (*LoCoMoResult, error) {
	set, err := loadLoCoMo(cfg.Data)
	if err != nil {
		return nil, err
	}
	defer set.cleanup()
	db := set.db
	res := &LoCoMoResult{Conversations: len(set.qa), Turns: set.turns,
		Note: "each conversation in its own workspace; a turn's text is '<speaker>: <text>'; an evidence turn counts as recalled when the pack cites a span of its artifact"}

	for _, budget := range cfg.Budgets {
		b := LoCoMoBudget{Budget: budget, RecallByCat: map[string]float64{}, AbstainByCat: map[string]float64{}, MissedCat1to4: map[string]int{}}
		found, total := map[int]float64{}, map[int]float64{}
		abstain, asked := map[int]float64{}, map[int]float64{}
		var lat []time.Duration
		var tokens float64
		for ci, qas := range set.qa {
			for _, qa := range qas {
				start := time.Now()
				pr, err := db.ContextPack(context.Background(), "eval", engine.PackRequest{Workspace: fmt.Sprintf("locomo-%d", ci), Query: qa.Question, MaxTokens: budget})
				lat = append(lat, time.Since(start))
				if err != nil {
					return nil, err
				}
				tokens += float64(pr.Result.TotalTokens)
				cited := map[string]bool{}
				for _, c := range pr.Result.Citations {
					cited[set.turnOf[ci][c.ArtifactID]] = true
				}
				why := map[string]string{} // turn -> reason its most relevant span was excluded
				for _, e := range pr.Result.Exclusions {
					if t := set.turnOf[ci][e.ArtifactID]; why[t] == "" {
						why[t] = e.Reason
					}
				}
				for _, id := range qa.gold() {
					total[qa.Category]++
					switch {
					case cited[id]:
						found[qa.Category]++
					case qa.Category > 4:
					case why[id] != "":
						b.MissedCat1to4[why[id]]++
					default:
						b.MissedCat1to4["NOT_CANDIDATE"]++
					}
				}
				asked[qa.Category]++
				if pr.Result.Abstain {
					abstain[qa.Category]++
				}
			}
		}
		var f14, t14, a14, q14 float64
		for cat := 1; cat <= 5; cat++ {
			if total[cat] > 0 {
				b.RecallByCat[strconv.Itoa(cat)] = found[cat] / total[cat]
			}
			if asked[cat] > 0 {
				b.AbstainByCat[strconv.Itoa(cat)] = abstain[cat] / asked[cat]
			}
			if cat <= 4 {
				f14, t14 = f14+found[cat], t14+total[cat]
				a14, q14 = a14+abstain[cat], q14+asked[cat]
			}
		}
		b.RecallCat1to4 = f14 / t14
		b.AbstainCat5 = abstain[5] / asked[5]
		b.AbstainOther = a14 / q14
		n := q14 + asked[5]
		b.MeanTokens = tokens / n
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.P50ms = float64(lat[len(lat)/2].Microseconds()) / 1e3
		b.P99ms = float64(lat[int(0.99*float64(len(lat)-1))].Microseconds()) / 1e3
		res.Questions = int(n)
		res.Budgets = append(res.Budgets, b)
	}
	return res, nil
}
