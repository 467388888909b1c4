package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/embed"
	"github.com/loci-memory/loci/embed/crossenc"
	"github.com/loci-memory/loci/embed/glove"
	"github.com/loci-memory/loci/embed/minilm"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/invindex"
	"github.com/loci-memory/loci/pack"
	"github.com/loci-memory/loci/retrieval"
	"github.com/loci-memory/loci/wal"
	"github.com/valyala/fasthttp"
)

// EvalLateInteraction, when its Model is set, gives the packers of the
// evaluations and benchmarks (the engine's and the server's) a
// late-interaction model (retrieval.Packer.SetLateInteraction), and every
// pack asks it to score its Depth best candidates (late_depth); with
// MaxSpans, packs leave late_depth out and the server runs Depth in
// workspaces of at most MaxSpans spans, as loci serve does by default
// (service.Config.LateInteractionMaxSpans). With Rows, the servers'
// engines store segments' token rows (engine.Options.TokenRows, within
// MaxSpans), and `loci bench pack` builds them before timing. `loci eval`
// and `loci bench pack` set it (--late-depth), and bench/lateinteraction
// (its variants).
var EvalLateInteraction struct {
	Model    retrieval.LateInteraction
	Rows     engine.TokenRower
	Depth    int
	MaxSpans int
}

// evalLateDepth is the late depth of every pack of an evaluation: 0
// without a model.
func evalLateDepth() int {
	if EvalLateInteraction.Model == nil {
		return 0
	}
	return EvalLateInteraction.Depth
}

// sendLateDepth sets late_depth in a pack request's body unless the
// server's default decides it (EvalLateInteraction.MaxSpans) or there is
// no model.
func sendLateDepth(req map[string]any) {
	if d := evalLateDepth(); d > 0 && EvalLateInteraction.MaxSpans == 0 {
		req["late_depth"] = d
	}
}

// LoCoMoConfig sets up `loci eval locomo`.
type LoCoMoConfig struct {
	Data    string // a file in LoCoMo's layout, e.g. locomo-dev.json
	Budgets []int  // max_tokens values, e.g. 512,1024,2048,4096
	// Ingest is how turns reach the store: IngestViaEngine (in process, the
	// default) or IngestViaHTTP (a real server on loopback, as a client sends).
	Ingest string
	// Timestamps is how turns are stamped: TimestampsSpread (the default),
	// TimestampsSession or TimestampsNone.
	Timestamps string
	// Embedder names the semantic channel's embedder (EmbedderMiniLM, the
	// default; EmbedderGloVe; EmbedderNone): the engine's in IngestViaEngine,
	// the server's in IngestViaHTTP.
	Embedder string
	// Shape is how a chat turn is sent (ShapeRole, the default;
	// ShapePrefix, ShapeActor, ShapeNone): the shapes clients use.
	Shape string
	// Progress, if set, receives a line at most every few seconds while a
	// long phase runs (loci eval prints it to stderr).
	Progress func(string)
	// RerankDepth, when positive, is sent as each pack's rerank_depth: the
	// relevance model (embed/crossenc) rereads that many candidates.
	RerankDepth int
	// MinRelevance, when not nil, is sent as each pack's min_relevance
	// (the relevance floor; nil: the server's default).
	MinRelevance *float64
	// Dump, if set, receives one JSON line per question and budget (the
	// conversation, category, budget, confidence, abstain flag and the
	// share of gold turns cited): what calibrating confidence reads.
	Dump io.Writer
}

// Shapes of a chat turn (LoCoMoConfig.Shape): where the speaker's name goes.
// In every shape but ShapeRole the first speaker of a conversation
// (speaker_a) is role "user" and the second (speaker_b) "assistant".
const (
	// ShapeRole sends role = the speaker's name, content = the text.
	ShapeRole = "role"
	// ShapePrefix sends role user/assistant, content = "<Name>: <text>".
	ShapePrefix = "prefix"
	// ShapeActor sends role user/assistant, content = the text, and the
	// speaker as the artifact's actor_id (over HTTP, one v2 batch per run
	// of consecutive turns by the same speaker). Packs are asked without
	// actor_id, so every actor's public turns are visible.
	ShapeActor = "actor"
	// ShapeNone sends role user/assistant, content = the text: no names.
	ShapeNone = "none"
)

// locomoActor is the actor_id of the turns in every shape but ShapeActor.
const locomoActor = "locomo"

// Ingest modes and timestamp styles of LoCoMoConfig.
const (
	// IngestViaEngine calls the engine in process: IngestBatch per session,
	// then a compaction; packs through retrieval.Packer.ContextPack.
	IngestViaEngine = "engine"
	// IngestViaHTTP starts the real HTTP server on loopback and ingests each
	// conversation with POST /v2/ingest in batches of locomoHTTPBatch turns
	// (session_id the LoCoMo session), then packs with POST
	// /v1/context-pack, as a client would. Exclusion reasons come from the
	// pack's receipt (GET /v1/receipts/{id}), read outside the timing.
	IngestViaHTTP = "http"

	// TimestampsSpread gives the n-th turn of a session the session's
	// date-time plus n seconds: every turn its own second.
	TimestampsSpread = "spread"
	// TimestampsSession gives every turn of a session the session's
	// date-time, the only time LoCoMo records: real clients send this.
	TimestampsSession = "session"
	// TimestampsNone sends no timestamp: the store stamps the time of ingest.
	TimestampsNone = "none"
)

// Embedders of the evaluations' engines (LoCoMoConfig.Embedder,
// BEIRConfig.Embedder).
const (
	// EmbedderMiniLM is the built-in sentence encoder (embed/minilm), the
	// default.
	EmbedderMiniLM = "minilm"
	// EmbedderGloVe is the built-in averaged GloVe word vectors.
	EmbedderGloVe = "glove"
	// EmbedderNone turns the semantic channel off: lexical and temporal only.
	EmbedderNone = "none"
)

// evalEmbedder returns the embedder called name ("" is EmbedderMiniLM),
// nil for EmbedderNone.
func evalEmbedder(name string) (embed.Embedder, error) {
	switch name {
	case "", EmbedderMiniLM:
		e, err := minilm.Default()
		if err != nil {
			return nil, err
		}
		return e, nil
	case EmbedderGloVe:
		return glove.New(), nil
	case EmbedderNone:
		return nil, nil
	}
	return nil, fmt.Errorf("embedder %q: want minilm, glove or none", name)
}

// evalOptions are the engine options of an evaluation's scratch engine:
// fsync off (the figures are about reads) and the embedder emb (nil: none).
func evalOptions(emb embed.Embedder) engine.Options {
	return engine.Options{Sync: wal.SyncOff, Embedder: emb, NoEmbedder: emb == nil}
}

// evalEngine opens an engine with evalOptions(emb) and no background
// maintenance in a new temporary directory, and returns a cleanup that
// closes it and removes the directory.
func evalEngine(prefix string, emb embed.Embedder) (*engine.DB, func(), error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, nil, err
	}
	opts := evalOptions(emb)
	opts.DisableBackground = true
	db, err := engine.Open(dir, opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }, nil
}

// locomoHTTPBatch is the number of turns per POST /v2/ingest in IngestViaHTTP.
const locomoHTTPBatch = 500

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
	// ConfidenceAUC is the ROC AUC of the pack confidence as a separator of
	// answerable (categories 1-4) from unanswerable (category 5) questions:
	// the probability that a random answerable question gets a higher
	// confidence than a random unanswerable one, ties counted as half. 0.5
	// means confidence does not separate them; see confidenceAUC.
	ConfidenceAUC float64 `json:"confidence_auc_cat5_vs_cat1_4"`
	// Gold turns of categories 1-4 not cited, by the exclusion reason of
	// their most relevant span, or NOT_CANDIDATE when no channel returned
	// them.
	MissedCat1to4 map[string]int `json:"missed_gold_cat1_4"`
	// AnswerCoverage is the mean share of the words of a question's gold
	// answer (stop words left out) that its pack's context text holds, over
	// categories 1, 3 and 4 (category 2's answers are dates, often relative
	// to another, which the lines state as ISO dates): what the agent can
	// read, where evidence recall counts cited turns. A line that cut its
	// turn to the sentences holding the question's words would raise recall
	// and lower this (docs/benchmarks.md).
	AnswerCoverage      float64            `json:"answer_coverage_cat1_3_4"`
	AnswerCoverageByCat map[string]float64 `json:"answer_coverage_by_category"`
	MeanTokens          float64            `json:"mean_total_tokens"`
	P50ms               float64            `json:"pack_p50_ms"`
	P99ms               float64            `json:"pack_p99_ms"`
}

// LoCoMoResult is what `loci eval locomo --json` prints.
type LoCoMoResult struct {
	Conversations int    `json:"conversations"`
	Turns         int    `json:"turns"`
	Questions     int    `json:"questions"`
	Ingest        string `json:"ingest"`
	Timestamps    string `json:"timestamps"`
	Embedder      string `json:"embedder"`
	Shape         string `json:"shape"`
	// IngestSeconds is the time the ingest took, the scratch server's
	// start included; over HTTP, with waiting for embedding (and token
	// rows) as the batches ask.
	IngestSeconds float64        `json:"ingest_seconds"`
	Budgets       []LoCoMoBudget `json:"budgets"`
	Note          string         `json:"note"`
}

var diaIDPattern = regexp.MustCompile(`^D(\d+):(\d+)$`)

// locomoQA is one LoCoMo question.
type locomoQA struct {
	Question string          `json:"question"`
	Answer   json.RawMessage `json:"answer"` // a string or a number; absent in category 5
	Evidence []string        `json:"evidence"`
	Category int             `json:"category"`
}

// answerCategories are the LoCoMo categories answer coverage is measured
// on: category 2's answers are dates, often relative to another, which
// evidence lines state as ISO dates, and category 5 has none.
var answerCategories = []int{1, 3, 4}

// answerWords returns the words of an answer (a JSON string or number) that
// answer coverage looks for (answerCoverage): lowercase runs of letters and
// digits, not a stop word, each once; nil when there is no answer.
func answerWords(answer json.RawMessage) []string {
	var a any
	d := json.NewDecoder(bytes.NewReader(answer))
	d.UseNumber() // 1000000 stays 1000000, not 1e+06
	if d.Decode(&a) != nil || a == nil {
		return nil
	}
	var words []string
	for _, w := range lowerWords(fmt.Sprint(a)) {
		if !invindex.IsStopWord(w) && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	return words
}

// lowerWords returns the lowercase runs of letters and digits of s.
func lowerWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// answerCoverage is the share of words (answerWords, at least one) found
// among the words (lowerWords) of a pack's context text: whether the
// evidence an agent reads holds the answer, where evidence recall asks only
// whether its turn is cited.
func answerCoverage(words []string, context string) float64 {
	held := map[string]bool{}
	for _, w := range lowerWords(context) {
		held[w] = true
	}
	n := 0
	for _, w := range words {
		if held[w] {
			n++
		}
	}
	return float64(n) / float64(len(words))
}

// locomoTurn is one turn of a LoCoMo conversation, as ingested.
type locomoTurn struct {
	Speaker, DiaID, Text string
	First                bool      // said by the conversation's speaker_a
	Session              int       // the LoCoMo session number
	When                 time.Time // the session's date-time
	Pos                  int       // position within the session, from 0
}

// locomoConv is one LoCoMo conversation: its turns in order (sessions
// ascending, turns as listed) and its questions.
type locomoConv struct {
	turns []locomoTurn
	qa    []locomoQA
}

// stamp returns the timestamp a turn is ingested with under style (zero:
// none, the store stamps the time of ingest).
func (t *locomoTurn) stamp(style string) time.Time {
	switch style {
	case TimestampsSession:
		return t.When
	case TimestampsNone:
		return time.Time{}
	}
	return t.When.Add(time.Duration(t.Pos) * time.Second) // spread
}

func (t *locomoTurn) sessionID() string { return fmt.Sprintf("session_%d", t.Session) }

// packOutcome is what the evaluation reads from one context pack.
type packOutcome struct {
	cited      []uuid.UUID // artifacts of the citations
	excluded   []pack.Exclusion
	abstain    bool
	confidence float64
	tokens     int
	text       string // context_text
}

// locomoStore is a store holding the conversations, conversation ci in
// workspace "locomo-<ci>": the engine in process, or a server over HTTP.
type locomoStore interface {
	// pack runs one context pack; only the pack itself is timed.
	pack(ci int, query string, budget int) (packOutcome, time.Duration, error)
	close()
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

// readLoCoMo reads a file in LoCoMo's layout: an array of conversations,
// each with "qa" and a "conversation" object of "session_<n>" turn arrays
// and "session_<n>_date_time" dates.
func readLoCoMo(path string) ([]locomoConv, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var convs []struct {
		QA           []locomoQA                 `json:"qa"`
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	speakerA := func(conv map[string]json.RawMessage) string {
		var a string
		json.Unmarshal(conv["speaker_a"], &a)
		return a
	}
	if err := json.Unmarshal(raw, &convs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]locomoConv, len(convs))
	for ci, conv := range convs {
		out[ci].qa = conv.QA
		var sessions []int
		for key := range conv.Conversation {
			if n, ok := strings.CutPrefix(key, "session_"); ok && !strings.Contains(n, "_") {
				if i, err := strconv.Atoi(n); err == nil {
					sessions = append(sessions, i)
				}
			}
		}
		sort.Ints(sessions)
		first := speakerA(conv.Conversation)
		for _, si := range sessions {
			var when string
			json.Unmarshal(conv.Conversation[fmt.Sprintf("session_%d_date_time", si)], &when)
			ts, err := time.Parse("3:04 pm on 2 January, 2006", when)
			if err != nil {
				return nil, fmt.Errorf("%s: conversation %d session %d: date %q: %w", path, ci, si, when, err)
			}
			var turns []struct {
				Speaker string `json:"speaker"`
				DiaID   string `json:"dia_id"`
				Text    string `json:"text"`
			}
			if err := json.Unmarshal(conv.Conversation[fmt.Sprintf("session_%d", si)], &turns); err != nil {
				return nil, fmt.Errorf("%s: conversation %d session %d: %w", path, ci, si, err)
			}
			for ti, t := range turns {
				out[ci].turns = append(out[ci].turns, locomoTurn{Speaker: t.Speaker, DiaID: t.DiaID, Text: t.Text, First: t.Speaker == first,
					Session: si, When: ts, Pos: ti})
			}
		}
	}
	return out, nil
}

// payload is the turn's chat_turn payload in shape.
func (t *locomoTurn) payload(shape string) []byte {
	role, content := "assistant", t.Text
	if t.First {
		role = "user"
	}
	switch shape {
	case ShapeRole:
		role = t.Speaker
	case ShapePrefix:
		content = t.Speaker + ": " + t.Text
	}
	payload, _ := json.Marshal(map[string]string{"role": role, "content": content})
	return payload
}

// actor is the turn's actor_id in shape.
func (t *locomoTurn) actor(shape string) string {
	if shape == ShapeActor {
		return t.Speaker
	}
	return locomoActor
}

// locomoNote says what a result measured, in shape.
func locomoNote(shape string) string {
	how := map[string]string{
		ShapeRole:   "role = the speaker's name, content = the text",
		ShapePrefix: "role user (speaker_a) / assistant (speaker_b), content = '<speaker>: <text>'",
		ShapeActor:  "role user (speaker_a) / assistant (speaker_b), content = the text, actor_id = the speaker; packs asked without actor_id",
		ShapeNone:   "role user (speaker_a) / assistant (speaker_b), content = the text, no names",
	}[shape]
	return "each conversation in its own workspace; a turn is sent as " + how +
		"; an evidence turn counts as recalled when the pack cites a span of its artifact"
}

// engineStore is the engine in process (IngestViaEngine).
type engineStore struct {
	db      *engine.DB
	packer  *retrieval.Packer
	cleanup func()
	rerank  int      // rerank_depth of every pack
	minRel  *float64 // min_relevance of every pack (nil: the default)
}

// ingestEngine ingests every conversation into a scratch engine, one
// IngestBatch per session (each turn a chat_turn in shape, with the actor
// the shape gives it, idempotency key its dialogue id), and compacts. turnOf[ci] maps an
// artifact to its dialogue id.
func ingestEngine(convs []locomoConv, style, shape string, emb embed.Embedder, p *progress) (*engineStore, []map[uuid.UUID]string, error) {
	db, cleanup, err := evalEngine("loci-eval-locomo-", emb)
	if err != nil {
		return nil, nil, err
	}
	turnOf := make([]map[uuid.UUID]string, len(convs))
	for ci, conv := range convs {
		turnOf[ci] = map[uuid.UUID]string{}
		for i := 0; i < len(conv.turns); {
			p.tick("ingesting and embedding: conversation %d of %d", ci+1, len(convs))
			j := i
			var ins []engine.IngestInput
			for ; j < len(conv.turns) && conv.turns[j].Session == conv.turns[i].Session; j++ {
				t := &conv.turns[j]
				ins = append(ins, engine.IngestInput{Workspace: fmt.Sprintf("locomo-%d", ci), ActorID: t.actor(shape), Type: "chat_turn",
					Payload: t.payload(shape), IdempotencyKey: t.DiaID, SessionID: t.sessionID(), Timestamp: t.stamp(style)})
			}
			rs, err := db.IngestBatch("eval", ins)
			if err != nil {
				cleanup()
				return nil, nil, err
			}
			for k, r := range rs {
				if emb != nil && !r.Embedded {
					cleanup()
					return nil, nil, fmt.Errorf("conversation %d: turn %s stored without vectors (embedder %s failed; see the log)", ci, ins[k].IdempotencyKey, emb.Model())
				}
				turnOf[ci][r.ArtifactID] = ins[k].IdempotencyKey
			}
			i = j
		}
	}
	stop := p.during("compacting")
	err = db.Compact()
	stop()
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	rr, err := crossenc.Default()
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	packer := retrieval.New(db)
	packer.SetReranker(rr)
	if EvalLateInteraction.Model != nil {
		packer.SetLateInteraction(EvalLateInteraction.Model)
	}
	return &engineStore{db: db, packer: packer, cleanup: cleanup}, turnOf, nil
}

func (s *engineStore) pack(ci int, query string, budget int) (packOutcome, time.Duration, error) {
	start := time.Now()
	tun := pack.DefaultTuning()
	if s.minRel != nil {
		tun.MinRelevance = *s.minRel
	}
	pr, err := s.packer.ContextPack(context.Background(), "eval", retrieval.PackRequest{Workspace: fmt.Sprintf("locomo-%d", ci), Query: query, MaxTokens: budget,
		RerankDepth: s.rerank, LateDepth: evalLateDepth(), LateMaxSpans: EvalLateInteraction.MaxSpans, Tuning: tun})
	lat := time.Since(start)
	if err != nil {
		return packOutcome{}, 0, err
	}
	o := packOutcome{excluded: pr.Result.Exclusions, abstain: pr.Result.Abstain, confidence: pr.Result.Confidence, tokens: pr.Result.TotalTokens,
		text: pr.Result.ContextText}
	for _, c := range pr.Result.Citations {
		o.cited = append(o.cited, c.ArtifactID)
	}
	return o, lat, nil
}

func (s *engineStore) close() { s.cleanup() }

// httpStore is a real server on loopback, used as a client would
// (IngestViaHTTP, and `loci eval longmemeval`).
type httpStore struct {
	s      *server
	client *fasthttp.HostClient
	// embedded, when set, requires every ingested artifact to be embedded
	// once its batch is answered (the server has an embedder).
	embedded bool
	rerank   int      // rerank_depth of every pack (0: none sent)
	minRel   *float64 // min_relevance of every pack (nil: none sent)
}

// newHTTPStore starts a server whose semantic channel is emb's (nil:
// lexical only). The server embeds in the background, as loci serve does;
// each batch asks to be answered once embedded (wait_for_embedding), as a
// client that packs right after ingesting would.
func newHTTPStore(prefix string, emb embed.Embedder) (*httpStore, error) {
	s, err := startServerWith(prefix, wal.SyncOff, &Embedding{Embedder: emb})
	if err != nil {
		return nil, err
	}
	return &httpStore{s: s, client: &fasthttp.HostClient{Addr: s.addr, ReadTimeout: time.Minute, WriteTimeout: time.Minute},
		embedded: emb != nil}, nil
}

// do sends body (if any) as JSON to path and decodes the response into out,
// requiring status want.
func (h *httpStore) do(method, path string, body any, want int, out any) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + h.s.addr + path)
	req.Header.SetMethod(method)
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		req.Header.SetContentType("application/json")
		req.SetBody(b)
	}
	if err := h.client.Do(req, resp); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode() != want {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode(), resp.Body())
	}
	if err := json.Unmarshal(resp.Body(), out); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// chatTurn is one chat_turn artifact of a v2 ingest batch: its payload,
// idempotency key, session and timestamp (zero: none sent, the store
// stamps the time of ingest).
type chatTurn struct {
	payload []byte
	key     string
	session string
	stamp   time.Time
}

// ingest sends turns to POST /v2/ingest as one batch by actor in workspace
// ws, waiting for their embedding, and returns their artifacts in order.
func (h *httpStore) ingest(ws, actor string, turns []chatTurn) ([]uuid.UUID, error) {
	items := make([]map[string]any, len(turns))
	for k, t := range turns {
		items[k] = map[string]any{"artifact_type": "chat_turn", "raw_payload": json.RawMessage(t.payload),
			"idempotency_key": t.key, "session_id": t.session}
		if !t.stamp.IsZero() {
			items[k]["timestamp"] = t.stamp.UTC().Format(time.RFC3339Nano)
		}
	}
	var out struct {
		Ingested []struct {
			ArtifactID uuid.UUID `json:"artifact_id"`
			Embedding  string    `json:"embedding"`
		} `json:"ingested"`
	}
	body := map[string]any{"workspace_id": ws, "actor_id": actor, "artifacts": items, "wait_for_embedding": true}
	for try := 1; ; try++ {
		status := 201 // created; a batch sent again is all replays: 200
		if try > 1 {
			status = 200
		}
		if err := h.do("POST", "/v2/ingest", body, status, &out); err != nil {
			return nil, err
		}
		if len(out.Ingested) != len(turns) {
			return nil, fmt.Errorf("%d artifacts ingested of %d", len(out.Ingested), len(turns))
		}
		ids := make([]uuid.UUID, len(turns))
		pending := ""
		for k, r := range out.Ingested {
			if h.embedded && r.Embedding != engine.EmbeddingEmbedded && pending == "" {
				pending = fmt.Sprintf("turn %s is %q", turns[k].key, r.Embedding)
			}
			ids[k] = r.ArtifactID
		}
		if pending == "" {
			return ids, nil
		}
		// The server waits at most 20 s per request; on a loaded machine a
		// batch can take longer. Sending it again (the same idempotency
		// keys: nothing new is stored) waits again, as a client would.
		if try == maxIngestTries {
			return nil, fmt.Errorf("%s, not embedded, after %d requests with wait_for_embedding", pending, try)
		}
	}
}

// maxIngestTries bounds how often httpStore.ingest sends a batch whose
// embedding is still pending: 30 waits of at most 20 s.
const maxIngestTries = 30

// ingestHTTP starts a server and ingests each conversation with POST
// /v2/ingest in conversation order, in batches of at most locomoHTTPBatch
// turns (a batch may span sessions; session_id says which turn is in
// which); in ShapeActor a batch is one run of consecutive turns by the
// same speaker, its actor.
func ingestHTTP(convs []locomoConv, style, shape string, emb embed.Embedder, p *progress) (*httpStore, []map[uuid.UUID]string, error) {
	h, err := newHTTPStore("loci-eval-locomo-http-", emb)
	if err != nil {
		return nil, nil, err
	}
	turnOf := make([]map[uuid.UUID]string, len(convs))
	for ci, conv := range convs {
		turnOf[ci] = map[uuid.UUID]string{}
		for i := 0; i < len(conv.turns); {
			p.tick("ingesting and embedding: conversation %d of %d", ci+1, len(convs))
			j := i + 1
			for ; j < min(i+locomoHTTPBatch, len(conv.turns)); j++ {
				if shape == ShapeActor && conv.turns[j].Speaker != conv.turns[i].Speaker {
					break
				}
			}
			batch := conv.turns[i:j]
			turns := make([]chatTurn, len(batch))
			for k := range batch {
				t := &batch[k]
				turns[k] = chatTurn{payload: t.payload(shape), key: t.DiaID, session: t.sessionID(), stamp: t.stamp(style)}
			}
			ids, err := h.ingest(fmt.Sprintf("locomo-%d", ci), batch[0].actor(shape), turns)
			if err != nil {
				h.close()
				return nil, nil, fmt.Errorf("conversation %d: %w", ci, err)
			}
			for k, id := range ids {
				turnOf[ci][id] = batch[k].DiaID
			}
			i = j
		}
	}
	return h, turnOf, nil
}

// contextPack runs POST /v1/context-pack with req (workspace_id, query,
// max_tokens and whatever else a caller sets) and times it; with
// exclusions it reads them from the pack's receipt (GET
// /v1/receipts/{id}, outside the timing: the v1 body carries none).
func (h *httpStore) contextPack(req map[string]any, exclusions bool) (packOutcome, time.Duration, error) {
	var out struct {
		Citations  []pack.Citation `json:"citations"`
		Confidence float64         `json:"confidence"`
		Abstain    bool            `json:"abstain_flag"`
		ReceiptID  uuid.UUID       `json:"receipt_id"`
		Tokens     int             `json:"total_tokens"`
		Text       string          `json:"context_text"`
	}
	start := time.Now()
	err := h.do("POST", "/v1/context-pack", req, 200, &out)
	lat := time.Since(start)
	if err != nil {
		return packOutcome{}, 0, err
	}
	o := packOutcome{abstain: out.Abstain, confidence: out.Confidence, tokens: out.Tokens, text: out.Text}
	for _, c := range out.Citations {
		o.cited = append(o.cited, c.ArtifactID)
	}
	if exclusions {
		var receipt struct {
			Exclusions []pack.Exclusion `json:"exclusions"`
		}
		if err := h.do("GET", "/v1/receipts/"+out.ReceiptID.String(), nil, 200, &receipt); err != nil {
			return packOutcome{}, 0, err
		}
		o.excluded = receipt.Exclusions
	}
	return o, lat, nil
}

func (h *httpStore) pack(ci int, query string, budget int) (packOutcome, time.Duration, error) {
	req := map[string]any{"workspace_id": fmt.Sprintf("locomo-%d", ci), "query": query, "max_tokens": budget}
	if h.rerank > 0 {
		req["rerank_depth"] = h.rerank
	}
	sendLateDepth(req)
	if h.minRel != nil {
		req["min_relevance"] = *h.minRel
	}
	return h.contextPack(req, true)
}

func (h *httpStore) close() { h.s.close() }

// confidenceAUC returns the ROC AUC of confidence as a separator of
// answerable from unanswerable questions: over every pair of one
// answerable and one unanswerable question, the share where the answerable
// one has the higher confidence, a tie counting half. It counts in
// integers over all pairs, so the result does not depend on order; 0 when
// either side is empty.
func confidenceAUC(answerable, unanswerable []float64) float64 {
	if len(answerable) == 0 || len(unanswerable) == 0 {
		return 0
	}
	var twice int64 // 2 per win, 1 per tie
	for _, a := range answerable {
		for _, u := range unanswerable {
			switch {
			case a > u:
				twice += 2
			case a == u:
				twice++
			}
		}
	}
	return float64(twice) / float64(2*int64(len(answerable))*int64(len(unanswerable)))
}

// EvalLoCoMo ingests every LoCoMo conversation into its own workspace (see
// IngestViaEngine and IngestViaHTTP), asks every question as a v1 context pack
// query at each budget, and measures how many gold evidence turns the pack
// cites, why the others were not, how often it abstains, and how well its
// confidence separates unanswerable questions.
func EvalLoCoMo(cfg LoCoMoConfig) (*LoCoMoResult, error) {
	if cfg.Ingest == "" {
		cfg.Ingest = IngestViaEngine
	}
	if cfg.Timestamps == "" {
		cfg.Timestamps = TimestampsSpread
	}
	switch cfg.Timestamps {
	case TimestampsSpread, TimestampsSession, TimestampsNone:
	default:
		return nil, fmt.Errorf("timestamps %q: want session, spread or none", cfg.Timestamps)
	}
	if cfg.Shape == "" {
		cfg.Shape = ShapeRole
	}
	switch cfg.Shape {
	case ShapeRole, ShapePrefix, ShapeActor, ShapeNone:
	default:
		return nil, fmt.Errorf("shape %q: want role, prefix, actor or none", cfg.Shape)
	}
	if cfg.Embedder == "" {
		cfg.Embedder = EmbedderMiniLM
	}
	emb, err := evalEmbedder(cfg.Embedder)
	if err != nil {
		return nil, err
	}
	convs, err := readLoCoMo(cfg.Data)
	if err != nil {
		return nil, err
	}
	var store locomoStore
	var turnOf []map[uuid.UUID]string
	p := newProgress(cfg.Progress)
	ingestStart := time.Now()
	switch cfg.Ingest {
	case IngestViaEngine:
		store, turnOf, err = ingestEngine(convs, cfg.Timestamps, cfg.Shape, emb, p)
	case IngestViaHTTP:
		store, turnOf, err = ingestHTTP(convs, cfg.Timestamps, cfg.Shape, emb, p)
	default:
		return nil, fmt.Errorf("ingest %q: want engine or http", cfg.Ingest)
	}
	if err != nil {
		return nil, err
	}
	defer store.close()
	switch st := store.(type) {
	case *engineStore:
		st.rerank, st.minRel = cfg.RerankDepth, cfg.MinRelevance
	case *httpStore:
		st.rerank, st.minRel = cfg.RerankDepth, cfg.MinRelevance
	}
	res := &LoCoMoResult{Conversations: len(convs), Ingest: cfg.Ingest, Timestamps: cfg.Timestamps, Embedder: cfg.Embedder,
		Shape: cfg.Shape, IngestSeconds: time.Since(ingestStart).Seconds(), Note: locomoNote(cfg.Shape)}
	for _, c := range convs {
		res.Turns += len(c.turns)
	}

	for _, budget := range cfg.Budgets {
		b := LoCoMoBudget{Budget: budget, RecallByCat: map[string]float64{}, AbstainByCat: map[string]float64{}, MissedCat1to4: map[string]int{},
			AnswerCoverageByCat: map[string]float64{}}
		covered, coverable := map[int]float64{}, map[int]float64{}
		found, total := map[int]float64{}, map[int]float64{}
		abstain, asked := map[int]float64{}, map[int]float64{}
		var confAnswerable, confUnanswerable []float64
		var lat []time.Duration
		var tokens float64
		for ci, conv := range convs {
			p.tick("packing at budget %d: conversation %d of %d", budget, ci+1, len(convs))
			for _, qa := range conv.qa {
				o, took, err := store.pack(ci, qa.Question, budget)
				if err != nil {
					return nil, err
				}
				lat = append(lat, took)
				tokens += float64(o.tokens)
				cited := map[string]bool{}
				for _, a := range o.cited {
					cited[turnOf[ci][a]] = true
				}
				why := map[string]string{} // turn -> reason its most relevant span was excluded
				for _, e := range o.excluded {
					if t := turnOf[ci][e.ArtifactID]; why[t] == "" {
						why[t] = e.Reason
					}
				}
				answer := -1.0 // the answer's coverage, when it is measured
				if words := answerWords(qa.Answer); len(words) > 0 && slices.Contains(answerCategories, qa.Category) {
					answer = answerCoverage(words, o.text)
					covered[qa.Category] += answer
					coverable[qa.Category]++
				}
				if cfg.Dump != nil {
					n := 0
					for _, id := range qa.gold() {
						if cited[id] {
							n++
						}
					}
					fields := map[string]any{"conversation": ci, "category": qa.Category, "budget": budget,
						"confidence": o.confidence, "abstain": o.abstain, "gold": len(qa.gold()), "cited": n}
					if answer >= 0 {
						fields["answer_coverage"] = answer
					}
					line, _ := json.Marshal(fields)
					cfg.Dump.Write(append(line, '\n'))
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
				if o.abstain {
					abstain[qa.Category]++
				}
				if qa.Category == 5 {
					confUnanswerable = append(confUnanswerable, o.confidence)
				} else {
					confAnswerable = append(confAnswerable, o.confidence)
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
		var cov, ncov float64
		for _, cat := range answerCategories {
			if coverable[cat] > 0 {
				b.AnswerCoverageByCat[strconv.Itoa(cat)] = covered[cat] / coverable[cat]
				cov, ncov = cov+covered[cat], ncov+coverable[cat]
			}
		}
		if ncov > 0 {
			b.AnswerCoverage = cov / ncov
		}
		b.RecallCat1to4 = f14 / t14
		b.AbstainCat5 = abstain[5] / asked[5]
		b.AbstainOther = a14 / q14
		b.ConfidenceAUC = confidenceAUC(confAnswerable, confUnanswerable)
		n := q14 + asked[5]
		b.MeanTokens = tokens / n
		b.P50ms, b.P99ms = latencyQuantiles(lat)
		res.Questions = int(n)
		res.Budgets = append(res.Budgets, b)
	}
	return res, nil
}
