package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/loci-memory/loci/wal"
)

func TestCorpusDeterministic(t *testing.T) {
	a, b := NewCorpus(7), NewCorpus(7)
	for i := 0; i < 200; i++ {
		if x, y := a.Next("w"), b.Next("w"); !reflect.DeepEqual(x, y) {
			t.Fatalf("item %d differs for the same seed", i)
		}
	}
	if reflect.DeepEqual(NewCorpus(1).Next("w"), NewCorpus(2).Next("w")) {
		t.Fatal("different seeds give the same data")
	}
}

// The benchmarks run end to end at toy sizes, so their code stays working.
func TestIngestSmall(t *testing.T) {
	r, err := Ingest(IngestConfig{Dir: t.TempDir(), Writers: 4, Artifacts: 300, Sync: wal.SyncAlways, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Artifacts != 300 || r.ArtifactsPerS <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.DiskBytes <= r.PayloadBytes/2 || r.Fsync != "always" {
		t.Fatalf("implausible result %+v", r)
	}
}

func TestRestartSmall(t *testing.T) {
	r, err := Restart(RestartConfig{Dir: t.TempDir(), Artifacts: 500, Seed: 1, Restarts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.OpenSeconds) != 2 || r.HeadArtifacts != 500 || r.DiskBytes <= 0 {
		t.Fatalf("implausible result %+v", r)
	}
}

func TestSearchSmall(t *testing.T) {
	r, err := Search(SearchConfig{Spans: 500, Queries: 20, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Spans < 500 || r.Queries == 0 || r.LexicalTop100.P50ms <= 0 || r.SemanticTop10.P99ms < r.SemanticTop10.P50ms || r.Segments == 0 {
		t.Fatalf("implausible result %+v", r)
	}
}

func TestLoCoMoSmall(t *testing.T) {
	conv := `[{"sample_id":"x","qa":[
	  {"question":"Where did Ana go hiking?","evidence":["D1:2"],"category":4},
	  {"question":"What colour is Ana's car?","evidence":["D2:1"],"category":5}],
	 "conversation":{"speaker_a":"Ana","speaker_b":"Ben",
	  "session_1_date_time":"1:56 pm on 8 May, 2023","session_1":[
	    {"speaker":"Ana","dia_id":"D1:1","text":"Hi Ben, long week!"},
	    {"speaker":"Ana","dia_id":"D1:2","text":"I went hiking on Mount Rainier last weekend."}],
	  "session_2_date_time":"7:55 pm on 9 June, 2023","session_2":[
	    {"speaker":"Ben","dia_id":"D2:1","text":"I bought a new bike yesterday."}]}}]`
	path := filepath.Join(t.TempDir(), "locomo.json")
	os.WriteFile(path, []byte(conv), 0o644)
	r, err := EvalLoCoMo(LoCoMoConfig{Data: path, Budgets: []int{64, 512}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Turns != 3 || r.Questions != 2 || len(r.Budgets) != 2 || r.Budgets[1].RecallByCat["4"] != 1 {
		t.Fatalf("implausible result %+v", r)
	}
}
