package engine_test

import (
	"context"
	"encoding/json"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/retrieval"
	"github.com/loci-memory/loci/service"
)

// init makes the engine's tests pack through package retrieval (see
// packprobe_test.go).
func init() {
	engine.SetProbePack(func(ctx context.Context, db *engine.DB, tenant string, req engine.PackProbe) (*engine.PackOutcome, error) {
		r := retrieval.PackRequest{Workspace: req.Workspace, Query: req.Query, MaxTokens: req.MaxTokens, Metadata: req.Metadata}
		if err := service.CheckPackRequest(&r); err != nil { // the packer takes valid requests
			return nil, err
		}
		pr, err := retrieval.New(db).ContextPack(ctx, tenant, r)
		if err != nil {
			return nil, err
		}
		out := &engine.PackOutcome{ContextText: pr.Result.ContextText, ReceiptID: pr.ReceiptID}
		for _, c := range pr.Result.Citations {
			out.Citations = append(out.Citations, engine.PackedSpan{ArtifactID: c.ArtifactID, SpanID: c.SpanID, ContentHash: c.ContentHash})
		}
		for _, e := range pr.Result.Exclusions {
			out.Exclusions = append(out.Exclusions, engine.PackedSpan{ArtifactID: e.ArtifactID, SpanID: e.SpanID})
		}
		out.JSON, err = json.Marshal(pr.Result)
		return out, err
	})
}
