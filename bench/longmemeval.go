package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
)

// LongMemEvalConfig sets up `loci eval longmemeval`.
type LongMemEvalConfig struct {
	Data    string // a file in LongMemEval's layout, e.g. longmemeval-s-dev.json
	Budgets []int  // max_tokens values, e.g. 512,1024,2048,4096
	// Embedder names the server's semantic channel (EmbedderMiniLM, the
	// default; EmbedderGloVe; EmbedderNone).
	Embedder string
	// Limit, when positive, evaluates only the first Limit questions.
	Limit int
	// RerankDepth, when positive, is sent as each pack's rerank_depth.
	RerankDepth int
	// MinRelevance, when not nil, is sent as each pack's min_relevance.
	MinRelevance *float64
	// Dump, if set, receives one JSON line per question and budget (id,
	// type, whether it is an _abs question, budget, confidence, abstain flag,
	// evidence turns and those cited).
	Dump io.Writer
	// Progress, if set, receives a line at most every few seconds while a
	// long phase runs (loci eval prints it to stderr), with the running
	// figures after each question.
	Progress func(string)
}

// LongMemEvalType is the outcome of one question type at one budget
// (answerable questions only).
type LongMemEvalType struct {
	Questions     int     `json:"questions"`
	TurnRecall    float64 `json:"evidence_turn_recall"`
	SessionRecall float64 `json:"evidence_session_recall"`
}

// LongMemEvalBudget is the outcome at one budget.
type LongMemEvalBudget struct {
	Budget int `json:"budget"`
	// TurnRecall is the share of the evidence turns (has_answer) of the
	// answerable questions that the pack cites.
	TurnRecall float64 `json:"evidence_turn_recall"`
	// SessionRecall is the share of answerable questions whose evidence
	// sessions (answer_session_ids) are all cited: a session is cited when
	// the pack cites a span of one of its turns.
	SessionRecall float64                    `json:"evidence_session_recall"`
	ByType        map[string]LongMemEvalType `json:"by_question_type"`
	// Abstention rates of the unanswerable (_abs) questions and of the rest.
	AbstainAbs   float64 `json:"abstain_rate_abs"`
	AbstainOther float64 `json:"abstain_rate_answerable"`
	// ConfidenceAUC is the ROC AUC of the pack confidence as a separator
	// of the answerable questions from the _abs ones (see confidenceAUC).
	ConfidenceAUC float64 `json:"confidence_auc_abs_vs_rest"`
	// AnswerCoverage is the mean share of the words of a question's answer
	// (stop words left out) that its pack's context text holds, over the
	// question types whose answer a turn states (lmeStatedAnswer); the
	// others' answers are counted, computed or a description of what the
	// user would prefer. See LoCoMoBudget.AnswerCoverage.
	AnswerCoverage float64 `json:"answer_coverage_stated"`
	MeanTokens     float64 `json:"mean_total_tokens"`
	P50ms          float64 `json:"pack_p50_ms"`
	P99ms          float64 `json:"pack_p99_ms"`
}

// LongMemEvalResult is what `loci eval longmemeval --json` prints.
type LongMemEvalResult struct {
	Questions     int                 `json:"questions"`
	Unanswerable  int                 `json:"questions_abs"`
	Sessions      int                 `json:"sessions"`
	Turns         int                 `json:"turns"`
	EvidenceTurns int                 `json:"evidence_turns"`
	Embedder      string              `json:"embedder"`
	IngestSeconds float64             `json:"ingest_seconds"`
	PackSeconds   float64             `json:"pack_seconds"`
	Budgets       []LongMemEvalBudget `json:"budgets"`
	Note          string              `json:"note"`
}

// lmeTurn is one turn of a LongMemEval session.
type lmeTurn struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	HasAnswer bool   `json:"has_answer"`
}

// lmeQuestion is one LongMemEval question with its haystack.
type lmeQuestion struct {
	ID             string          `json:"question_id"`
	Type           string          `json:"question_type"`
	Question       string          `json:"question"`
	Date           string          `json:"question_date"`
	AnswerSessions []string        `json:"answer_session_ids"`
	Answer         json.RawMessage `json:"answer"`
	SessionIDs     []string        `json:"haystack_session_ids"`
	Dates          []string        `json:"haystack_dates"`
	Sessions       [][]lmeTurn     `json:"haystack_sessions"`
	asked          time.Time       // Date parsed
	when           []time.Time     // Dates parsed
}

// abstains reports whether the question is unanswerable (its id ends in
// "_abs": the haystack does not hold the answer).
func (q *lmeQuestion) abstains() bool { return strings.HasSuffix(q.ID, "_abs") }

// parseLMEDate parses LongMemEval's dates, e.g. "2023/05/30 (Tue) 23:42",
// as UTC (the data set gives no zone).
func parseLMEDate(s string) (time.Time, error) {
	return time.Parse("2006/01/02 (Mon) 15:04", s)
}

// readLongMemEval reads a file in LongMemEval's layout: an array of
// questions, each with its haystack of sessions and their dates.
func readLongMemEval(path string) ([]lmeQuestion, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var qs []lmeQuestion
	if err := json.Unmarshal(raw, &qs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range qs {
		q := &qs[i]
		if len(q.SessionIDs) != len(q.Sessions) || len(q.Dates) != len(q.Sessions) {
			return nil, fmt.Errorf("%s: question %s: %d sessions, %d session ids, %d dates", path, q.ID, len(q.Sessions), len(q.SessionIDs), len(q.Dates))
		}
		if q.asked, err = parseLMEDate(q.Date); err != nil {
			return nil, fmt.Errorf("%s: question %s: %w", path, q.ID, err)
		}
		q.when = make([]time.Time, len(q.Dates))
		for si, d := range q.Dates {
			if q.when[si], err = parseLMEDate(d); err != nil {
				return nil, fmt.Errorf("%s: question %s session %d: %w", path, q.ID, si, err)
			}
		}
	}
	return qs, nil
}

// order returns the question's session indices in the order of their
// dates (stable: sessions of one date as listed), the order in which a
// client would have sent them.
func (q *lmeQuestion) order() []int {
	idx := make([]int, len(q.Sessions))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return q.when[idx[a]].Before(q.when[idx[b]]) })
	return idx
}

// lmeScore is what one pack of one question scores.
type lmeScore struct {
	evidenceFound, evidence int  // has_answer turns cited, of all
	sessionsAll             bool // every evidence session cited
	hasSessions             bool // the question names evidence sessions
}

// score scores a pack that cited the artifacts cited, where ids[s][t] is
// the artifact of turn t of session s.
func (q *lmeQuestion) score(ids [][]uuid.UUID, cited []uuid.UUID) lmeScore {
	citedArt := map[uuid.UUID]bool{}
	for _, a := range cited {
		citedArt[a] = true
	}
	var sc lmeScore
	citedSession := map[string]bool{}
	for si, turns := range q.Sessions {
		for ti, t := range turns {
			if citedArt[ids[si][ti]] {
				citedSession[q.SessionIDs[si]] = true
			}
			if t.HasAnswer {
				sc.evidence++
				if citedArt[ids[si][ti]] {
					sc.evidenceFound++
				}
			}
		}
	}
	sc.hasSessions = len(q.AnswerSessions) > 0
	sc.sessionsAll = sc.hasSessions
	for _, s := range q.AnswerSessions {
		if !citedSession[s] {
			sc.sessionsAll = false
		}
	}
	return sc
}

// lmeTally adds up the packs of one budget.
type lmeTally struct {
	found, total   map[string]int // evidence turns by question type
	sessOK, sessQ  map[string]int // questions with all evidence sessions cited, with any, by type
	questions      map[string]int // answerable questions by type
	abstain, asked [2]int         // [0] answerable, [1] _abs
	confidence     [2][]float64
	covered        float64 // answer coverage summed over the questions it is measured on
	coverable      int
	tokens         int
	lat            []time.Duration
}

func newLMETally() *lmeTally {
	return &lmeTally{found: map[string]int{}, total: map[string]int{}, sessOK: map[string]int{}, sessQ: map[string]int{}, questions: map[string]int{}}
}

// add counts one pack of question q.
func (t *lmeTally) add(q *lmeQuestion, sc lmeScore, o packOutcome, lat time.Duration) {
	k := 0
	if q.abstains() {
		k = 1
	}
	t.asked[k]++
	if o.abstain {
		t.abstain[k]++
	}
	t.confidence[k] = append(t.confidence[k], o.confidence)
	t.tokens += o.tokens
	t.lat = append(t.lat, lat)
	if k == 1 {
		return // recall is of the answerable questions
	}
	if words := answerWords(q.Answer); len(words) > 0 && lmeStatedAnswer[q.Type] {
		t.covered += answerCoverage(words, o.text)
		t.coverable++
	}
	t.questions[q.Type]++
	t.found[q.Type] += sc.evidenceFound
	t.total[q.Type] += sc.evidence
	if sc.hasSessions {
		t.sessQ[q.Type]++
		if sc.sessionsAll {
			t.sessOK[q.Type]++
		}
	}
}

// lmeStatedAnswer holds the question types whose answer one of the
// haystack's turns states, in its words or nearly: answer coverage is
// measured on them.
var lmeStatedAnswer = map[string]bool{"single-session-user": true, "single-session-assistant": true, "knowledge-update": true}

// share is a/b, 0 when b is 0.
func share(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// result is the budget's figures so far.
func (t *lmeTally) result(budget int) LongMemEvalBudget {
	b := LongMemEvalBudget{Budget: budget, ByType: map[string]LongMemEvalType{}}
	var found, total, ok, withSessions int
	for typ, n := range t.questions {
		b.ByType[typ] = LongMemEvalType{Questions: n, TurnRecall: share(t.found[typ], t.total[typ]), SessionRecall: share(t.sessOK[typ], t.sessQ[typ])}
		found, total = found+t.found[typ], total+t.total[typ]
		ok, withSessions = ok+t.sessOK[typ], withSessions+t.sessQ[typ]
	}
	b.TurnRecall, b.SessionRecall = share(found, total), share(ok, withSessions)
	b.AbstainOther, b.AbstainAbs = share(t.abstain[0], t.asked[0]), share(t.abstain[1], t.asked[1])
	b.ConfidenceAUC = confidenceAUC(t.confidence[0], t.confidence[1])
	if t.coverable > 0 {
		b.AnswerCoverage = t.covered / float64(t.coverable)
	}
	b.MeanTokens = share(t.tokens, t.asked[0]+t.asked[1])
	b.P50ms, b.P99ms = latencyQuantiles(t.lat)
	return b
}

// latencyQuantiles returns the median and 99th percentile of lat in
// milliseconds (0, 0 for none); it sorts lat.
func latencyQuantiles(lat []time.Duration) (p50, p99 float64) {
	if len(lat) == 0 {
		return 0, 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return float64(lat[len(lat)/2].Microseconds()) / 1e3, float64(lat[int(0.99*float64(len(lat)-1))].Microseconds()) / 1e3
}

// ingestQuestion sends a question's haystack to workspace ws, one POST
// /v2/ingest per session in date order (each turn a chat_turn with the
// role and content given, the session's id and date), and returns the
// artifact of each turn, ids[session][turn].
func ingestQuestion(h *httpStore, ws string, q *lmeQuestion) ([][]uuid.UUID, error) {
	ids := make([][]uuid.UUID, len(q.Sessions))
	for _, si := range q.order() {
		session := q.Sessions[si]
		if len(session) == 0 {
			continue
		}
		turns := make([]chatTurn, len(session))
		for ti, t := range session {
			payload, _ := json.Marshal(map[string]string{"role": t.Role, "content": t.Content})
			turns[ti] = chatTurn{payload: payload, key: fmt.Sprintf("s%d-t%d", si, ti), session: q.SessionIDs[si], stamp: q.when[si]}
		}
		var err error
		if ids[si], err = h.ingest(ws, "longmemeval", turns); err != nil {
			return nil, fmt.Errorf("question %s session %s: %w", q.ID, q.SessionIDs[si], err)
		}
	}
	return ids, nil
}

// EvalLongMemEval evaluates context packs on LongMemEval as a client
// would: a real server on loopback, each question's haystack ingested into
// its own workspace over HTTP (ingestQuestion), then the question asked
// with POST /v1/context-pack at each budget, as_of its question_date. It
// measures how many evidence turns and sessions the packs cite, how often
// they abstain on the unanswerable (_abs) questions and on the rest, and
// how well confidence separates the two.
func EvalLongMemEval(cfg LongMemEvalConfig) (*LongMemEvalResult, error) {
	if cfg.Embedder == "" {
		cfg.Embedder = EmbedderMiniLM
	}
	emb, err := evalEmbedder(cfg.Embedder)
	if err != nil {
		return nil, err
	}
	qs, err := readLongMemEval(cfg.Data)
	if err != nil {
		return nil, err
	}
	if cfg.Limit > 0 && cfg.Limit < len(qs) {
		qs = qs[:cfg.Limit]
	}
	h, err := newHTTPStore("loci-eval-longmemeval-", emb)
	if err != nil {
		return nil, err
	}
	defer h.close()
	res := &LongMemEvalResult{Questions: len(qs), Embedder: cfg.Embedder,
		Note: "each question's haystack in its own workspace over HTTP, sessions in date order, one POST /v2/ingest per session (chat_turn {role, content} as given, " +
			"session_id the session's id, timestamp its date as UTC); the question asked with POST /v1/context-pack, as_of its question_date; " +
			"recall counts the answerable questions: a turn is cited when the pack cites a span of its artifact, a session when it cites one of its turns"}
	tallies := make([]*lmeTally, len(cfg.Budgets))
	for i := range tallies {
		tallies[i] = newLMETally()
	}
	p := newProgress(cfg.Progress)
	var ingest, packing time.Duration
	for qi := range qs {
		q := &qs[qi]
		if q.abstains() {
			res.Unanswerable++
		}
		res.Sessions += len(q.Sessions)
		for _, s := range q.Sessions {
			res.Turns += len(s)
			for _, t := range s {
				if t.HasAnswer && !q.abstains() {
					res.EvidenceTurns++
				}
			}
		}
		start := time.Now()
		ws := fmt.Sprintf("longmemeval-%d", qi)
		ids, err := ingestQuestion(h, ws, q)
		if err != nil {
			return nil, err
		}
		ingest += time.Since(start)
		start = time.Now()
		for bi, budget := range cfg.Budgets {
			req := map[string]any{"workspace_id": ws, "query": q.Question, "max_tokens": budget,
				"as_of": q.asked.UTC().Format(time.RFC3339Nano)}
			if cfg.MinRelevance != nil {
				req["min_relevance"] = *cfg.MinRelevance
			}
			if cfg.RerankDepth > 0 {
				req["rerank_depth"] = cfg.RerankDepth
			}
			sendLateDepth(req)
			o, lat, err := h.contextPack(req, false)
			if err != nil {
				return nil, fmt.Errorf("question %s: %w", q.ID, err)
			}
			sc := q.score(ids, o.cited)
			tallies[bi].add(q, sc, o, lat)
			if cfg.Dump != nil {
				line, _ := json.Marshal(map[string]any{"id": q.ID, "type": q.Type, "abs": q.abstains(), "budget": budget,
					"confidence": o.confidence, "abstain": o.abstain, "evidence": sc.evidence, "cited": sc.evidenceFound, "sessions_all": sc.sessionsAll})
				cfg.Dump.Write(append(line, '\n'))
			}
		}
		packing += time.Since(start)
		var sofar []string
		for bi, budget := range cfg.Budgets {
			b := tallies[bi].result(budget)
			sofar = append(sofar, fmt.Sprintf("%d: %.3f/%.3f", budget, b.TurnRecall, b.SessionRecall))
		}
		p.tick("question %d of %d done; turn/session recall so far at %s", qi+1, len(qs), strings.Join(sofar, ", "))
	}
	res.IngestSeconds, res.PackSeconds = ingest.Seconds(), packing.Seconds()
	for bi, budget := range cfg.Budgets {
		res.Budgets = append(res.Budgets, tallies[bi].result(budget))
	}
	return res, nil
}
