package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/loci-memory/loci/cluster"
	"github.com/loci-memory/loci/httpd"
	"github.com/loci-memory/loci/service"
)

// clusterConfig checks the cluster flags (docs/cluster.md).
func clusterConfig(urls, node, shards, replicas, nodeReplicas, advertise, addr string) (*cluster.Config, error) {
	cfg := &cluster.Config{NodeID: node, Addr: advertise}
	for _, u := range strings.Split(urls, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.URLs = append(cfg.URLs, u)
		}
	}
	if len(cfg.URLs) == 0 {
		return nil, fmt.Errorf("LOCI_CLUSTER_NATS: %q names no NATS server", urls)
	}
	if cfg.NodeID == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("LOCI_CLUSTER_NODE: not set, and the host name is unknown: %w", err)
		}
		cfg.NodeID = h
	}
	var err error
	if cfg.Shards, err = strconv.Atoi(shards); err != nil || cfg.Shards < 1 || cfg.Shards > 1024 {
		return nil, fmt.Errorf("LOCI_CLUSTER_SHARDS: %q is not an integer from 1 to 1024", shards)
	}
	if cfg.StreamReplicas, err = strconv.Atoi(replicas); err != nil || cfg.StreamReplicas < 1 || cfg.StreamReplicas > 5 {
		return nil, fmt.Errorf("LOCI_CLUSTER_STREAM_REPLICAS: %q is not an integer from 1 to 5", replicas)
	}
	if cfg.Replicas, err = strconv.Atoi(nodeReplicas); err != nil || cfg.Replicas < 0 || cfg.Replicas > 64 {
		return nil, fmt.Errorf("LOCI_CLUSTER_REPLICAS: %q is not an integer from 0 (every node serves every shard) to 64", nodeReplicas)
	}
	if cfg.Addr == "" {
		cfg.Addr = addr
	}
	if cfg.Replicas > 0 {
		// Other nodes forward requests to this address.
		host, _, err := net.SplitHostPort(cfg.Addr)
		if ip := net.ParseIP(host); err != nil || host == "" || ip != nil && ip.IsUnspecified() {
			return nil, fmt.Errorf("LOCI_CLUSTER_ADVERTISE: %q is not an address other nodes can reach (with --cluster-replicas they forward requests to it): give host:port", cfg.Addr)
		}
	}
	return cfg, nil
}

// serveCluster is serve in cluster mode: the node joins the cluster (its
// engines catch up with the streams) while /health answers "starting", then
// serves until SIGINT or SIGTERM.
func serveCluster(cfg cluster.Config, ln net.Listener, hcfg httpd.Config, scfg service.Config, server *atomic.Pointer[httpd.Server], sig <-chan os.Signal, log *slog.Logger) error {
	var node *cluster.Node
	hcfg.Cluster = clusterRef{&node}
	srv := httpd.NewStarting(hcfg)
	server.Store(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	n, err := cluster.Open(ctx, cfg)
	if err != nil {
		cancel()
		srv.Shutdown()
		return err
	}
	cancel()
	node = n
	cfg.Control.Attach(node.ControlEngine().AppendControl)
	// Asynchronous indexing is refused in cluster mode: a job's fence would
	// compare sequence numbers of two different streams.
	scfg.NoJobs = true
	srv.Start(service.NewSharded(node, cfg.Control, scfg))
	// The engines' gauges follow the shards the node serves as they move,
	// and the node's own series (per-stream apply lag) join the scrapes.
	node.OnEngines(hcfg.Metrics.WatchEngines)
	hcfg.Metrics.Register(node)
	log.Info("loci: serving in cluster mode", "addr", ln.Addr().String(), "node", cfg.NodeID, "nats", strings.Join(cfg.URLs, ","),
		"shards", cfg.Shards, "stream_replicas", cfg.StreamReplicas, "replicas", cfg.Replicas, "data", cfg.Dir, "fsync", cfg.Engine.Sync.String(), "auth", scfg.AdminKey != "")
	if err := waitForStop(sig, served, log); err != nil {
		srv.Shutdown()
		node.Close()
		return err
	}
	shutdownErr := srv.Shutdown()
	flushErr := node.Flush()
	if diskFull(flushErr) {
		log.Warn("loci: final flush skipped: no space left on device; the next start replays the WAL", "err", flushErr)
		flushErr = nil
	}
	closeErr := node.Close()
	log.Info("loci: stopped")
	return errors.Join(shutdownErr, flushErr, closeErr)
}

// clusterRef is the httpd.Cluster of a node that is still joining: the
// server answers 503 "starting" until Start, so it is only called after
// the node is set.
type clusterRef struct{ n **cluster.Node }

func (c clusterRef) DataVersion() string { return (*c.n).DataVersion() }
func (c clusterRef) WaitDataVersion(ctx context.Context, v string) error {
	return (*c.n).WaitDataVersion(ctx, v)
}
func (c clusterRef) Status(ctx context.Context) any { return (*c.n).Status(ctx) }
func (c clusterRef) Stalled() error                 { return (*c.n).Stalled() }
func (c clusterRef) ForwardSecret() string          { return (*c.n).ForwardSecret() }
