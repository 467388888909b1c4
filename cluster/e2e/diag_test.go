package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// startDiag samples, once a second until the test ends, what each stream's
// leader reports (leader, last sequence, each replica's currency and lag)
// and what each Loci node's /health says (data version, NATS connection), and
// appends it to the file named by E2E_DIAG. It is a debugging aid for the
// stalls and timeouts a failing run shows; without E2E_DIAG it does nothing.
// With E2E_DIAG_SIGQUIT=1 as well, a node whose data version stays behind
// the streams' last sequences and unchanged for 6 s gets SIGQUIT once:
// the Go runtime writes every goroutine's stack to its log (and the node
// exits, so the test fails).
func (h *harness) startDiag() {
	path := os.Getenv("E2E_DIAG")
	if path == "" || h.nats == nil {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	nc, err := nats.Connect(strings.Join(h.nats.URLs(), ","), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		h.t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		h.t.Fatal(err)
	}
	streams := []string{"LOCI_CONTROL"}
	for k := range h.shards {
		streams = append(streams, fmt.Sprintf("LOCI_SHARD_%d", k))
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	h.t.Cleanup(func() {
		close(done)
		<-finished
		nc.Close()
		f.Close()
	})
	fmt.Fprintf(f, "=== %s %s\n", h.t.Name(), time.Now().UTC().Format(time.RFC3339Nano))
	quit := os.Getenv("E2E_DIAG_SIGQUIT") == "1"
	since := make([]time.Time, len(h.nodes)) // when the node first reported lastVersion
	lastVersion := make([]string, len(h.nodes))
	quitted := make([]bool, len(h.nodes))
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s", time.Now().UTC().Format("15:04:05.000"))
			lasts := make([]uint64, len(streams))
			for k, s := range streams {
				ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
				st, err := js.Stream(ctx, s)
				var info *jetstream.StreamInfo
				if err == nil {
					info, err = st.Info(ctx)
				}
				cancel()
				name := strings.TrimPrefix(s, "LOCI_")
				if err != nil {
					fmt.Fprintf(&b, " | %s: %v", name, err)
					continue
				}
				lasts[k] = info.State.LastSeq
				fmt.Fprintf(&b, " | %s: last %d leader %s", name, info.State.LastSeq, info.Cluster.Leader)
				for _, r := range info.Cluster.Replicas {
					fmt.Fprintf(&b, " %s(cur %v lag %d act %v)", r.Name, r.Current, r.Lag, r.Active.Round(time.Millisecond))
				}
			}
			for i := range h.nodes {
				if !h.Running(i) {
					fmt.Fprintf(&b, " | %s: down", h.Name(i))
					lastVersion[i] = ""
					continue
				}
				r := h.doTimeout(900*time.Millisecond, i, "GET", "/health", nil, nil)
				var hb struct {
					Status  string `json:"status"`
					Cluster struct {
						DataVersion string `json:"data_version"`
						NATS        string `json:"nats"`
					} `json:"cluster"`
				}
				json.Unmarshal(r.body, &hb)
				if r.err != nil {
					fmt.Fprintf(&b, " | %s: %v", h.Name(i), r.err)
					continue
				}
				fmt.Fprintf(&b, " | %s: %d %s v%s %s", h.Name(i), r.status, hb.Status, hb.Cluster.DataVersion, hb.Cluster.NATS)
				behind := false
				for k, p := range strings.Split(hb.Cluster.DataVersion, ".") {
					var v uint64
					fmt.Sscan(p, &v)
					behind = behind || (k < len(lasts) && lasts[k] > v)
				}
				if hb.Cluster.DataVersion != lastVersion[i] || !behind {
					lastVersion[i], since[i] = hb.Cluster.DataVersion, time.Now()
				}
				if quit && time.Since(since[i]) >= 6*time.Second && !quitted[i] {
					quitted[i] = true
					h.mu.Lock()
					if n := h.nodes[i]; n.runningLocked() {
						n.cmd.Process.Signal(syscall.SIGQUIT)
					}
					h.mu.Unlock()
					fmt.Fprintf(&b, " | SIGQUIT %s: behind and unchanged for 6 s", h.Name(i))
				}
			}
			fmt.Fprintln(f, b.String())
		}
	}()
}
