package httpd

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/loci-memory/loci/service"
	"github.com/valyala/fasthttp"
)

// TestSingleNodeIgnoresClusterHeaders: a single node has no cluster to
// forward to; the cluster's internal headers change nothing there (in a
// cluster, a forged mark is refused: cluster's partial_test.go).
func TestSingleNodeIgnoresClusterHeaders(t *testing.T) {
	h := newHarness(t, Config{}, service.Config{AdminKey: adminKey})
	h.do("POST", "/v1/ingest", adminKey, `{"workspace_id":"w1","actor_id":"a","artifact_type":"note","raw_payload":{"text":"hello"}}`).must(t, http.StatusCreated)
	plain := h.do("GET", "/v1/workspaces", adminKey, nil)
	req, err := http.NewRequest("GET", h.base+"/v1/workspaces", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", adminKey)
	req.Header.Set(forwardHeader, "anything")
	req.Header.Set(shardsHeader, "7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != plain.status || !bytes.Equal(body, plain.body) {
		t.Fatalf("with cluster headers: %d %s; without: %d %s", resp.StatusCode, body, plain.status, plain.body)
	}
}

// TestForwardClientDrainsDeadNodesConnections: after a node dies, the
// forwarding client tries and drops every kept-alive connection it had to
// it, then dials it, so that the error is a refused connection (unreachable:
// forward then asks the shard's next node), however many connections were
// idle, and never "closed before the first byte" (which forward answers
// with 503).
func TestForwardClientDrainsDeadNodesConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		time.Sleep(20 * time.Millisecond) // so that the calls below overlap, each on a connection of its own
		ctx.SetBodyString("ok")
	}}
	go srv.Serve(ln)
	c := newForwardClient()
	const idle = 40 // well above the 5 attempts fasthttp makes by default
	var wg sync.WaitGroup
	for range idle {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI("http://" + addr + "/")
			if err := c.DoTimeout(req, resp, 5*time.Second); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := c.ConnsCount(); n <= 8 {
		t.Fatalf("%d connections kept alive, want more than the 8 attempts of before", n)
	}
	// The node dies: its listener and every connection close.
	if err := srv.Shutdown(); err != nil {
		t.Fatal(err)
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + addr + "/")
	req.Header.SetMethod("POST")
	err = c.DoTimeout(req, resp, 5*time.Second)
	if err == nil || !unreachable(err) {
		t.Fatalf("a call to the dead node: %v, want a refused connection", err)
	}
}
