package httpd

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// clientPollInterval is how often a request still running checks whether
// its client is still connected. The first check comes after one interval,
// so fast requests never pay for it.
const clientPollInterval = 25 * time.Millisecond

// watchClient calls cancel once the client of ctx has closed its connection.
// fasthttp has no per-request disconnect signal, so while the request runs
// the socket is peeked at (non-blocking MSG_PEEK: a 0-byte read means the
// peer closed) every clientPollInterval. stop must be called before the
// handler returns: the connection is not ours afterwards.
func watchClient(ctx *fasthttp.RequestCtx, cancel context.CancelFunc) (stop func()) {
	sc, ok := ctx.Conn().(syscall.Conn)
	if !ok {
		return func() {}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return func() {}
	}
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if clientGone(rc) {
			cancel()
			return
		}
		t.Reset(clientPollInterval)
	}
	mu.Lock()
	t = time.AfterFunc(clientPollInterval, check)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}

// clientGone reports whether the peer of rc has closed or reset the
// connection. Bytes waiting (a pipelined request) mean it is still there.
func clientGone(rc syscall.RawConn) bool {
	var buf [1]byte
	gone := false
	err := rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK || err == syscall.EINTR:
		case err != nil:
			gone = true // reset, or otherwise unusable
		case n == 0:
			gone = true // orderly close
		}
		return true // never wait for data
	})
	return gone || err != nil
}
