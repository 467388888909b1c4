package mcpd

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/loci-memory/loci/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource addresses. A client lists the workspaces, and reads a workspace's
// newest artifacts or a receipt by id; each read is the caller's own, like
// the tools.
const (
	workspacesURI       = "loci://workspaces"
	workspaceTemplate   = "loci://workspaces/{workspace_id}"
	receiptTemplate     = "loci://receipts/{receipt_id}"
	workspacePrefix     = "loci://workspaces/"
	receiptPrefix       = "loci://receipts/"
	resourceMIME        = "application/json"
	workspaceReadLimits = "50"
)

func (s *Server) addResources() {
	s.mcp.AddResource(&mcp.Resource{URI: workspacesURI, Name: "workspaces", Title: "Workspaces",
		Description: "The caller's workspaces with their artifact and span counts.", MIMEType: resourceMIME},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			p, err := s.caller(ctx)
			if err != nil {
				return nil, err
			}
			res, err := s.listWorkspaces(ctx, p)
			return s.resource(ctx, req.Params.URI, res, err)
		})
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: workspaceTemplate, Name: "workspace", Title: "Workspace",
		Description: "A workspace's newest 50 artifacts (metadata, no payloads).", MIMEType: resourceMIME},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			ws, ok := strings.CutPrefix(req.Params.URI, workspacePrefix)
			if !ok || ws == "" || strings.Contains(ws, "/") {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			p, err := s.caller(ctx)
			if err != nil {
				return nil, err
			}
			limit := workspaceReadLimits
			res, err := s.svc.ListArtifacts(p, service.ListArtifactsRequest{WorkspaceID: ws, Limit: &limit})
			return s.resource(ctx, req.Params.URI, res, err)
		})
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: receiptTemplate, Name: "receipt", Title: "Decision receipt",
		Description: "The decision receipt of a context pack: what it included and excluded, and why.", MIMEType: resourceMIME},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id, ok := strings.CutPrefix(req.Params.URI, receiptPrefix)
			if !ok || id == "" {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			p, err := s.caller(ctx)
			if err != nil {
				return nil, err
			}
			body, err := s.svc.Receipt(p, id)
			return s.resource(ctx, req.Params.URI, body, err)
		})
}

// resource is the caller's read of uri: v as JSON, or err (not found stays
// not found, so ids of other tenants look like ids that never were). What
// it holds is the caller's tenant's own: labelled cacheScope "private"
// (only the requesting user's client may cache it; the protocol's default,
// "public", lets any client or intermediary serve it to others), with a
// ttlMs of 0, as memory changes with every write.
func (s *Server) resource(ctx context.Context, uri string, v any, err error) (*mcp.ReadResourceResult, error) {
	if err != nil {
		if errors.Is(err, service.ErrNotFound) || s.toolError(err).Error() == "not found" {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, s.callError(ctx, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Cacheable: mcp.Cacheable{CacheScope: "private"}, Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: resourceMIME, Text: string(b)}}}, nil
}
