// Package telemetry is Loci's metrics: the Prometheus series the server
// exports, the cheap hooks the request path calls to move them, and the
// admin HTTP handler that serves them with net/http/pprof.
//
// Two kinds of series live here. Counters and histograms that requests move
// (requests by route and status, pack latency, ingest volume, rate limits,
// WAL fsyncs) are updated with atomic adds only: no lock is taken on the
// request path. Gauges that describe the engine (head and segment sizes,
// embedding and indexing backlogs, compactions) are read from the engine's
// own accessors when a scrape asks for them, never kept up to date on a hot
// path.
package telemetry

import (
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/retrieval"
	"github.com/loci-memory/loci/wal"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Histogram buckets. Request latency is centred on the pack targets (p50
// 3 ms, p99 10 ms); fsync latency on an SSD's tenth of a millisecond to a
// slow disk's second; group-commit sizes are powers of two.
var (
	requestBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	fsyncBuckets   = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
	batchBuckets   = prometheus.ExponentialBuckets(1, 2, 13) // 1 .. 4096 records
)

// Reasons a request was refused for its rate, the values of
// loci_rate_limited_total's reason label.
const (
	RatePlan         = iota // the tenant's plan's requests per minute
	RateRegistration        // open registrations per client address
	RateConnections         // connections per client address
	rateReasons
)

var rateReasonNames = [rateReasons]string{"plan", "registration", "connections_per_ip"}

// UnmatchedRoute is the route label of requests that matched no route (404,
// 405, a malformed path) or could not be read at all (413, 400): the raw
// path never becomes a label, so ids cannot create series.
const UnmatchedRoute = "unmatched"

// Metrics holds every series of one server. Its methods are safe for
// concurrent use. The zero value is not usable: call New.
type Metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	packDuration prometheus.Histogram
	packTokens   prometheus.Counter
	artifacts    prometheus.Counter
	ingestBytes  prometheus.Counter
	rateLimited  [rateReasons]prometheus.Counter
	fsync        prometheus.Histogram
	batch        prometheus.Histogram

	dbs    atomic.Pointer[[]*engine.DB]
	packer atomic.Pointer[retrieval.Packer]
	jobs   atomic.Pointer[func() int]
}

// New returns the metrics of a server of the given version, with the Go
// runtime's and the process's standard series.
func New(version string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loci_http_requests_total",
		Help: "HTTP requests answered, by method, route pattern and status code."}, []string{"method", "route", "status"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "loci_http_request_duration_seconds",
		Help: "Time from reading a request to its response being ready, by method and route pattern.", Buckets: requestBuckets},
		[]string{"method", "route"})
	m.packDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "loci_context_pack_duration_seconds",
		Help:    "Time to serve a context pack (v1 and v2, answered 200), decoding and encoding included; its count is the packs served.",
		Buckets: requestBuckets})
	m.packTokens = prometheus.NewCounter(prometheus.CounterOpts{Name: "loci_context_pack_tokens_total",
		Help: "Tokens packed into the context packs served."})
	m.artifacts = prometheus.NewCounter(prometheus.CounterOpts{Name: "loci_ingested_artifacts_total",
		Help: "Artifacts accepted by ingest (synchronous, or queued for asynchronous indexing)."})
	m.ingestBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "loci_ingested_bytes_total",
		Help: "Raw payload bytes of the artifacts accepted by ingest."})
	limited := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loci_rate_limited_total",
		Help: "Requests and connections refused with 429 for their rate, by reason (plan, registration, connections_per_ip)."},
		[]string{"reason"})
	for i, name := range rateReasonNames {
		m.rateLimited[i] = limited.WithLabelValues(name)
	}
	m.fsync = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "loci_wal_fsync_duration_seconds",
		Help: "Duration of the write-ahead log's fsyncs.", Buckets: fsyncBuckets})
	m.batch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "loci_wal_group_commit_records",
		Help: "Records made durable by one fsync of the write-ahead log (group commit batch size).", Buckets: batchBuckets})
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "loci_build_info",
		Help: "Always 1; the version label is the server's.", ConstLabels: prometheus.Labels{"version": version}})
	build.Set(1)
	m.reg.MustRegister(m.requests, m.duration, m.packDuration, m.packTokens, m.artifacts, m.ingestBytes, limited,
		m.fsync, m.batch, build, engineCollector{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Route is the series of one route, resolved once so that observing a
// request takes no lock: the registry's label lookup (a read lock) runs only
// the first time a status is seen on the route.
type Route struct {
	m               *Metrics
	method, pattern string
	duration        prometheus.Observer
	byStatus        [500]atomic.Pointer[prometheus.Counter] // status 100..599
}

// Route returns the series of the route method pattern; pattern is the
// route's pattern (UnmatchedRoute for requests no route took), never a raw
// path.
func (m *Metrics) Route(method, pattern string) *Route {
	return &Route{m: m, method: method, pattern: pattern, duration: m.duration.WithLabelValues(method, pattern)}
}

// Observe counts one request answered with status after d.
func (r *Route) Observe(status int, d time.Duration) {
	r.duration.Observe(d.Seconds())
	if status < 100 || status > 599 {
		r.m.requests.WithLabelValues(r.method, r.pattern, strconv.Itoa(status)).Inc()
		return
	}
	slot := &r.byStatus[status-100]
	c := slot.Load()
	if c == nil {
		counter := r.m.requests.WithLabelValues(r.method, r.pattern, strconv.Itoa(status))
		slot.CompareAndSwap(nil, &counter)
		c = slot.Load()
	}
	(*c).Inc()
}

// PackServed counts a context pack served after d, with tokens packed.
func (m *Metrics) PackServed(d time.Duration, tokens uint64) {
	m.packDuration.Observe(d.Seconds())
	m.packTokens.Add(float64(tokens))
}

// Ingested counts artifacts accepted by ingest and their raw bytes.
func (m *Metrics) Ingested(artifacts, rawBytes uint64) {
	m.artifacts.Add(float64(artifacts))
	m.ingestBytes.Add(float64(rawBytes))
}

// RateLimited counts one refusal for reason (RatePlan, RateRegistration,
// RateConnections).
func (m *Metrics) RateLimited(reason int) {
	m.rateLimited[reason].Inc()
}

// ObserveWALSync is a wal.SyncObserver: it records an fsync's latency and,
// when it made records durable, the group commit's size.
func (m *Metrics) ObserveWALSync(took time.Duration, records int) {
	m.fsync.Observe(took.Seconds())
	if records > 0 {
		m.batch.Observe(float64(records))
	}
}

// WatchEngine makes scrapes report db's state, and db's WAL fsyncs feed the
// fsync and group-commit histograms. Until it is called (the engine is
// still recovering), scrapes have no engine series.
func (m *Metrics) WatchEngine(db *engine.DB) { m.WatchEngines([]*engine.DB{db}) }

// WatchEngines is WatchEngine over several engines (cluster mode: one per
// shard): each series is their sum, and storage_healthy is 0 if any is not.
func (m *Metrics) WatchEngines(dbs []*engine.DB) {
	for _, db := range dbs {
		db.ObserveWALSyncs(m.ObserveWALSync)
	}
	m.dbs.Store(&dbs)
}

// Register adds a collector's series to the scrapes (cluster mode: the
// node's per-stream apply lag). A collector registered twice is ignored.
func (m *Metrics) Register(c prometheus.Collector) {
	m.reg.Register(c)
}

// WatchPacks makes scrapes report p's admission counters (packs cancelled
// while waiting, packs waiting now).
func (m *Metrics) WatchPacks(p *retrieval.Packer) { m.packer.Store(p) }

// WatchJobs makes scrapes report the asynchronous indexing queue's depth as
// queued() returns it.
func (m *Metrics) WatchJobs(queued func() int) { m.jobs.Store(&queued) }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// AdminHandler is the admin listener's handler: /metrics and
// /debug/pprof/*, on a mux of its own (never http.DefaultServeMux, never
// the public listener).
func AdminHandler(m *Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also heap, goroutine, allocs, block, mutex, threadcreate
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// engineCollector reads the engine's gauges and counters, and the packer's
// admission counters, at scrape time.
type engineCollector struct{ m *Metrics }

func desc(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }

var (
	descHeadBytes      = desc("loci_head_bytes", "Bytes held by the active in-memory head.")
	descHeadArtifacts  = desc("loci_head_artifacts", "Artifacts in the active in-memory head.")
	descFrozenBytes    = desc("loci_frozen_head_bytes", "Bytes held by heads being flushed to segments.")
	descSegments       = desc("loci_segments", "Segment files in the manifest.")
	descSegmentBytes   = desc("loci_segment_bytes", "Bytes of the segment files in the manifest.")
	descSketchBytes    = desc("loci_sketch_bytes", "Heap bytes held by the semantic scan's sketches of segment vectors.")
	descBacklog        = desc("loci_embedding_backlog_artifacts", "Artifacts waiting for the background embedder.")
	descTokenRows      = desc("loci_token_rows_pending", "Segments without their token-row file and head artifacts without token rows (late interaction).")
	descJobsQueued     = desc("loci_index_jobs_queued", "Asynchronous indexing jobs queued or being indexed by this server.")
	descWALRecords     = desc("loci_wal_records_total", "Records written to the write-ahead log since the engine opened.")
	descWALBytes       = desc("loci_wal_bytes_total", "Framed bytes written to the write-ahead log since the engine opened.")
	descWALBatches     = desc("loci_wal_batches_total", "Group-commit batches written to the write-ahead log since the engine opened.")
	descWALFsyncs      = desc("loci_wal_fsyncs_total", "Fsyncs of write-ahead log files since the engine opened.")
	descCompactions    = desc("loci_compactions_total", "Compaction runs completed since the engine opened.")
	descCompactFails   = desc("loci_compaction_failures_total", "Compaction runs that failed (retried later) since the engine opened.")
	descPacksCancelled = desc("loci_context_packs_cancelled_total", "Context packs dropped before computing: the client left or the server stopped while they waited.")
	descPacksWaiting   = desc("loci_context_packs_waiting", "Context packs waiting for a computing slot.")
	descEmbedderDown   = desc("loci_embedder_unavailable", "1 while the background embedder's calls fail and are retried (its artifacts stay pending), else 0.")
	descRefusing       = desc("loci_ingest_backpressure", "1 while the unflushed data is at its limit, so ingests wait and are refused with 503 after 10 s, else 0.")
	descHealthy        = desc("loci_storage_healthy", "1 while the storage accepts writes, 0 while it is degraded (a full disk, failing fsyncs).")
)

func (c engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHeadBytes, descHeadArtifacts, descFrozenBytes, descSegments, descSegmentBytes,
		descSketchBytes, descBacklog, descTokenRows, descJobsQueued, descWALRecords, descWALBytes, descWALBatches, descWALFsyncs, descCompactions,
		descCompactFails, descPacksCancelled, descPacksWaiting, descEmbedderDown, descRefusing, descHealthy} {
		ch <- d
	}
}

func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	if queued := c.m.jobs.Load(); queued != nil {
		gauge(descJobsQueued, float64((*queued)()))
	}
	if p := c.m.packer.Load(); p != nil {
		pc := p.PackCounts()
		counter(descPacksCancelled, pc.Cancelled)
		gauge(descPacksWaiting, float64(pc.Waiting))
	}
	dbs := c.m.dbs.Load()
	if dbs == nil {
		return
	}
	var st engine.Stats
	var ws wal.Stats
	var mc engine.MaintenanceCounts
	healthy := 1.0
	for _, db := range *dbs {
		st.Add(db.Stats())
		w := db.WALStats()
		ws.Records += w.Records
		ws.Bytes += w.Bytes
		ws.Batches += w.Batches
		ws.Syncs += w.Syncs
		m := db.MaintenanceCounts()
		mc.Compactions += m.Compactions
		mc.CompactionFailures += m.CompactionFailures
		if db.Health() != nil {
			healthy = 0
		}
	}
	gauge(descHeadBytes, float64(st.HeadBytes))
	gauge(descHeadArtifacts, float64(st.HeadArtifacts))
	gauge(descFrozenBytes, float64(st.FrozenBytes))
	gauge(descSegments, float64(st.Segments))
	gauge(descSegmentBytes, float64(st.SegmentBytes))
	gauge(descSketchBytes, float64(st.SketchBytes))
	gauge(descBacklog, float64(st.EmbeddingBacklog))
	gauge(descTokenRows, float64(st.TokenRowsPending))
	flag := func(d *prometheus.Desc, on bool) {
		if on {
			gauge(d, 1)
		} else {
			gauge(d, 0)
		}
	}
	flag(descEmbedderDown, st.EmbedderError != "")
	flag(descRefusing, st.IngestRefused != "")
	counter(descWALRecords, ws.Records)
	counter(descWALBytes, ws.Bytes)
	counter(descWALBatches, ws.Batches)
	counter(descWALFsyncs, ws.Syncs)
	counter(descCompactions, mc.Compactions)
	counter(descCompactFails, mc.CompactionFailures)
	gauge(descHealthy, healthy)
}
