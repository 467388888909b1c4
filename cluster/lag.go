package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// lagPoll is how often a node reads every stream's last sequence, to know
// how far behind each applier is even while nobody writes through it.
const lagPoll = time.Second

// watchStreams reads the last sequence of every Loci stream (one JetStream
// API request for all of them) every lagPoll until Close: an applier
// behind a stream it knows of catches up by itself (Shard.watch), and the
// figures are what /health and /metrics report.
func (n *Node) watchStreams() {
	defer n.wg.Done()
	byName := map[string]*Shard{}
	for _, s := range n.all() {
		byName[s.stream] = s
	}
	t := time.NewTicker(lagPoll)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(n.ctx, lagPoll)
		l := n.js.ListStreams(ctx, jetstream.WithStreamListSubject("loci.>"))
		for info := range l.Info() {
			if s := byName[info.Config.Name]; s != nil {
				s.sawLast(info.State.LastSeq)
			}
		}
		cancel()
	}
}

// served is the streams this node applies and serves: the control
// stream, then its shards in order.
func (n *Node) served() []*Shard {
	out := []*Shard{n.ctl}
	for _, s := range n.shards {
		if s.ready.Load() {
			out = append(out, s)
		}
	}
	return out
}

// StreamLag is how far this node's applier of one stream is behind it.
type StreamLag struct {
	Stream  string `json:"stream"`
	Applied uint64 `json:"applied"`
	Last    uint64 `json:"last"`
	// Behind is Last - Applied: messages stored in the stream that this
	// node has not applied yet.
	Behind uint64 `json:"behind"`
	// StalledMS is how long the applier has been behind without applying
	// anything, in milliseconds.
	StalledMS int64 `json:"stalled_ms"`
}

// Lag lists the streams this node serves whose applier is behind, in
// stream order (none when it is caught up).
func (n *Node) Lag() []StreamLag {
	now := time.Now()
	var out []StreamLag
	for _, s := range n.served() {
		if lag := s.Lag(); lag > 0 {
			out = append(out, StreamLag{Stream: s.stream, Applied: s.Applied(), Last: s.Last(), Behind: lag,
				StalledMS: s.stalledFor(now).Milliseconds()})
		}
	}
	return out
}

// Stalled is an error naming the streams this node has been behind for
// longer than MaxVersionWait without applying anything (it cannot serve a
// read at a data version it was given in time), nil otherwise. /health
// answers 503 "lagging" with it; the applier keeps trying to catch up.
func (n *Node) Stalled() error {
	now := time.Now()
	var names []string
	for _, s := range n.served() {
		if d := s.stalledFor(now); d > MaxVersionWait {
			names = append(names, fmt.Sprintf("%s (applied %d of %d, nothing applied for %s)", s.stream, s.Applied(), s.Last(), d.Round(time.Second)))
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("this node is behind the cluster's log and has applied nothing of it for over %s (it keeps trying): %s", MaxVersionWait, strings.Join(names, ", "))
}

var (
	descApplied = prometheus.NewDesc("loci_cluster_applied_seq",
		"The last message of the stream this node has applied.", []string{"stream"}, nil)
	descLast = prometheus.NewDesc("loci_cluster_stream_last_seq",
		"The stream's last message, as this node last learnt it (polled every second).", []string{"stream"}, nil)
	descLag = prometheus.NewDesc("loci_cluster_apply_lag_messages",
		"Messages stored in the stream that this node has not applied yet.", []string{"stream"}, nil)
	descStalled = prometheus.NewDesc("loci_cluster_apply_stalled_seconds",
		"How long this node's applier of the stream has been behind it without applying anything (0 when caught up).", []string{"stream"}, nil)
	descRestarts = prometheus.NewDesc("loci_cluster_applier_restarts_total",
		"Consumers of the stream this node's applier re-created (a lost server, a gap, a stall).", []string{"stream"}, nil)
)

// Describe is prometheus.Collector's: the node's per-stream apply series.
func (n *Node) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descApplied, descLast, descLag, descStalled, descRestarts} {
		ch <- d
	}
}

// Collect is prometheus.Collector's: for each stream this node serves, what
// it applied, the stream's last message, the lag, the stall and the
// applier's restarts.
func (n *Node) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, s := range n.served() {
		ch <- prometheus.MustNewConstMetric(descApplied, prometheus.GaugeValue, float64(s.Applied()), s.stream)
		ch <- prometheus.MustNewConstMetric(descLast, prometheus.GaugeValue, float64(s.Last()), s.stream)
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(s.Lag()), s.stream)
		ch <- prometheus.MustNewConstMetric(descStalled, prometheus.GaugeValue, s.stalledFor(now).Seconds(), s.stream)
		ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, float64(s.restarts.Load()), s.stream)
	}
}
