package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-memory/loci/internal/proctest"
)

// TestMeasureSlowBodies measures the resident memory of `loci serve` while
// 1,000 connections each declare a 9 MiB body and send 2 MiB of it, then
// stall: once without a key (authentication on) and once with
// authentication off. It asserts nothing (figures are not timed
// assertions; see docs/benchmarks.md) and runs only when asked:
//
//	LOCI_MEASURE_SLOW_BODIES=1 go test ./cmd/loci/ -run TestMeasureSlowBodies -v
//
// LOCI_MEASURE_BIN measures another build of loci (an older one, say).
func TestMeasureSlowBodies(t *testing.T) {
	if os.Getenv("LOCI_MEASURE_SLOW_BODIES") == "" {
		t.Skip("a measurement: set LOCI_MEASURE_SLOW_BODIES=1 to run it")
	}
	bin := os.Getenv("LOCI_MEASURE_BIN")
	if bin == "" {
		bin = proctest.Loci(t)
	}
	const conns, declared, sent = 1000, 9 << 20, 2 << 20
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"no key, authentication on", []string{"API_KEY=measure-admin-key"}},
		{"authentication off", nil},
	} {
		p := startServeWith(t, bin, filepath.Join(t.TempDir(), "data"), serveOptions{
			env: append([]string{"LOCI_MAX_CONNS_PER_IP=0", "LOCI_EMBEDDER=none"}, c.env...)})
		idle := rss(t, p.cmd.Process.Pid)
		var wg sync.WaitGroup
		var mu sync.Mutex
		answered := map[string]int{}
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = ' '
		}
		for range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := net.Dial("tcp", p.addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				fmt.Fprintf(conn, "POST /v1/ingest HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", declared)
				for n := 0; n < sent; n += len(chunk) {
					if _, err := conn.Write(chunk); err != nil {
						break // refused: the server closed
					}
					time.Sleep(10 * time.Millisecond)
				}
				conn.SetReadDeadline(time.Now().Add(3 * time.Second))
				status, _ := bufio.NewReader(conn).ReadString('\n')
				mu.Lock()
				answered[strings.TrimSpace(status)]++
				mu.Unlock()
			}()
		}
		time.Sleep(2 * time.Second) // every connection is sending
		during := rss(t, p.cmd.Process.Pid)
		wg.Wait()
		peak := vmStatus(t, p.cmd.Process.Pid, "VmHWM")
		t.Logf("%s: %d connections declaring %d bytes, sending %d: RSS idle %s, after 2 s %s, peak %s; answers %v",
			c.name, conns, declared, sent, idle, during, peak, answered)
		p.stop(t)
	}
}

func rss(t *testing.T, pid int) string { return vmStatus(t, pid, "VmRSS") }

// vmStatus is a field of /proc/PID/status, such as "123456 kB".
func vmStatus(t *testing.T, pid int, field string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
