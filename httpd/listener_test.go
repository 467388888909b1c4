package httpd

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loci-memory/loci/service"
)

// faultyListener is a real loopback listener whose Accept fails with err
// for the first n calls, as accept(2) does when descriptors run out.
type faultyListener struct {
	net.Listener
	err      error
	failures atomic.Int32
}

func (l *faultyListener) Accept() (net.Conn, error) {
	if l.failures.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", l.err)}
	}
	return l.Listener.Accept()
}

// logBuffer collects log output safely across goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeRetriesTemporaryAcceptErrors injects accept errors into a real
// server: temporary ones (descriptors or memory exhausted, an aborted
// connection) must be retried and logged at most once a second, never end
// Serve, and the request waiting behind them must be served.
func TestServeRetriesTemporaryAcceptErrors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ENOBUFS} {
		t.Run(errno.Error(), func(t *testing.T) {
			h := newHarness(t, Config{})
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := &faultyListener{Listener: inner, err: errno}
			ln.failures.Store(8) // backoff 5+10+...+640 ms: about 1.3 s
			var logs logBuffer
			cfg := Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			srv := NewStarting(cfg)
			srv.Start(newService(h.db, h.ctl, cfg, service.Config{}))
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()

			resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + inner.Addr().String() + "/health")
			if err != nil {
				t.Fatalf("health behind %d injected %v errors: %v", 8, errno, err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("health: %d", resp.StatusCode)
			}
			select {
			case err := <-served:
				t.Fatalf("Serve returned on a temporary accept error: %v", err)
			default:
			}
			if n := strings.Count(logs.String(), "accept failed"); n < 1 || n > 3 {
				t.Fatalf("%d accept failure lines for 8 failures in ~1.3 s, want 1 to 3 (at most one a second):\n%s", n, logs.String())
			}
			srv.Shutdown() // also closes ln
			if err := <-served; err != nil {
				t.Fatalf("Serve after Shutdown: %v", err)
			}
		})
	}
}

// TestShutdownInterruptsAcceptBackoff: a listener waiting out its backoff
// must not hold Shutdown up.
func TestShutdownInterruptsAcceptBackoff(t *testing.T) {
	h := newHarness(t, Config{})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &faultyListener{Listener: inner, err: syscall.EMFILE}
	ln.failures.Store(1 << 30)
	srv := NewStarting(Config{Logger: quiet})
	srv.Start(newService(h.db, h.ctl, Config{Logger: quiet}, service.Config{}))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	time.Sleep(50 * time.Millisecond)
	go srv.Shutdown()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still retrying accept 5 s after Shutdown")
	}
}

// TestConnectionCapPerAddress opens more connections from one address than
// MaxConnsPerIP allows: the extra one gets 429 and is closed, the others are
// served, and closing one makes room again.
func TestConnectionCapPerAddress(t *testing.T) {
	h := newHarness(t, Config{MaxConnsPerIP: 3})
	addr := strings.TrimPrefix(h.base, "http://")
	get := func(c net.Conn) (int, error) {
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if code, err := get(c); err != nil || code != 200 {
			t.Fatalf("connection %d: %d %v", i, code, err)
		}
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
	extra.Close()
	if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("fourth connection from one address: %v %v, want 429 with Retry-After", resp, err)
	}
	conns[0].Close()
	conns = conns[1:]
	// The server sees the close asynchronously: retry briefly.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		code, err := get(c)
		if err == nil && code == 200 {
			conns = append(conns, c)
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no room after closing a connection: %d %v", code, err)
		}
	}
}

// TestIdleConnectionsTimeOut: a connection that sends nothing is closed
// after the idle timeout, so idle clients cannot hold descriptors forever.
func TestIdleConnectionsTimeOut(t *testing.T) {
	h := newHarness(t, Config{IdleTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(h.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	// The server may answer 408 before closing; either way it closes.
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("an idle connection was not closed (200 ms idle timeout): %v", err)
	}
}

// TestConnectionCapPerServer: past MaxConns open connections, a new one is
// answered 503 and closed, while the open ones keep being served.
func TestConnectionCapPerServer(t *testing.T) {
	h := newHarness(t, Config{MaxConns: 2, MaxConnsPerIP: -1})
	addr := strings.TrimPrefix(h.base, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	get := func(c net.Conn) (int, error) {
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if code, err := get(c); err != nil || code != 200 {
			t.Fatalf("connection %d: %d %v", i, code, err)
		}
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("third connection with MaxConns 2: %v %v, want 503", resp, err)
	}
	if code, err := get(conns[0]); err != nil || code != 200 {
		t.Fatalf("an open connection after the cap refused another: %d %v", code, err)
	}
}
