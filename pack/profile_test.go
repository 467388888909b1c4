package pack

import "testing"

func TestBudgetFor(t *testing.T) {
	tests := []struct {
		profile string
		max     int
		sparse  bool
		want    int
	}{
		{ProfileLowLatency, 4096, false, 4096},
		{ProfileLowLatency, 4096, true, 4096},
		{ProfileBalanced, 4096, false, 2730},
		{ProfileBalanced, 4096, true, 4096},
		{ProfileBalanced, 3, false, 2},
		{ProfileBalanced, 1, false, 1},
		{ProfileHighRecall, 4096, false, 4096},
		{ProfileHighRecall, 4096, true, 4096},
		{ProfileHighRecall, 3, false, 3},
		{ProfileHighRecall, 128000, false, 128000},
		{"unknown", 500, false, 500},
		{ProfileBalanced, 0, false, 0},
	}
	for _, tt := range tests {
		if got := BudgetFor(tt.profile, tt.max, tt.sparse); got != tt.want {
			t.Errorf("BudgetFor(%s, %d, %v) = %d, want %d", tt.profile, tt.max, tt.sparse, got, tt.want)
		}
	}
}

func TestSnippetsAndSparse(t *testing.T) {
	pin := cnd(10, 10, "Pinned: refunds always need a ticket number.", 0)
	a := cnd(1, 1, wordsText(0, 30), 9)
	b := cnd(2, 2, wordsText(100, 30), 3)
	r := Pack(req("refund", 1000), []Candidate{pin}, []Candidate{a, b}, est)
	s := Snippets(r)
	if len(s) != 3 || s[0].SpanID != a.SpanID || s[0].Citation != 2 || s[0].Content != a.Text || s[0].ArtifactType != "note" {
		t.Fatalf("snippets %+v", s)
	}
	for i := 1; i < len(s); i++ {
		if s[i].Score > s[i-1].Score {
			t.Errorf("snippets not by score: %+v", s)
		}
	}
	if Sparse(r) {
		t.Error("three citations are sparse")
	}
	r = Pack(req("refund", 1000), nil, []Candidate{a}, est)
	if !Sparse(r) {
		t.Error("one citation is not sparse")
	}
}
