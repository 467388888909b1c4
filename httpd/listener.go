package httpd

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Accept retry delays: the first retry after a temporary accept error waits
// acceptMinDelay, each further one twice as long, up to acceptMaxDelay.
const (
	acceptMinDelay = 5 * time.Millisecond
	acceptMaxDelay = time.Second
)

// tooManyConnsResponse answers a connection over the per-address cap.
var tooManyConnsResponse = func() []byte {
	body := `{"detail":"too many open connections from your address (LOCI_MAX_CONNS_PER_IP); close idle ones and retry"}`
	return []byte("HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// guardedListener is the listener the server accepts on. It keeps load from
// stopping the server: fasthttp's Serve returns on any accept error it does
// not know as temporary, and "too many open files" (EMFILE) made `loci
// serve` exit. So temporary accept errors are retried here with exponential
// backoff (logged at most once a second) and never reach fasthttp. It also
// caps the connections open from one client address, so that one client
// cannot take every file descriptor.
type guardedListener struct {
	net.Listener
	log   *slog.Logger
	perIP int // 0: no cap
	// refused, when set, is called for each connection refused over the
	// per-address cap (the rate-limit metric).
	refused func()

	closeOnce sync.Once
	closed    chan struct{}

	mu         sync.Mutex
	open       map[string]int // client address -> open connections
	lastLog    time.Time
	suppressed int // log lines held back since lastLog
}

func newGuardedListener(ln net.Listener, perIP int, log *slog.Logger) *guardedListener {
	return &guardedListener{Listener: ln, log: log, perIP: perIP, closed: make(chan struct{}), open: map[string]int{}}
}

// Accept returns the next connection, retrying temporary errors until one
// arrives or the listener is closed.
func (l *guardedListener) Accept() (net.Conn, error) {
	delay := acceptMinDelay
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || !temporaryAcceptError(err) {
				return nil, err
			}
			l.logf("httpd: accept failed; retrying (connections are shed until it succeeds)", "err", err.Error(), "retry_in", delay.String())
			t := time.NewTimer(delay)
			select {
			case <-l.closed:
				t.Stop()
				return nil, net.ErrClosed
			case <-t.C:
			}
			delay = min(2*delay, acceptMaxDelay)
			continue
		}
		delay = acceptMinDelay
		if tc, ok := l.track(c); ok {
			return tc, nil
		}
	}
}

// track counts c against its client address. Over the cap, c gets a 429
// and is closed (ok false).
func (l *guardedListener) track(c net.Conn) (net.Conn, bool) {
	if l.perIP <= 0 {
		return &trackedConn{Conn: c, release: func() {}}, true // no cap; wrapped for lingerOnClose
	}
	ip := clientIP(c.RemoteAddr())
	l.mu.Lock()
	if l.open[ip] >= l.perIP {
		l.mu.Unlock()
		if l.refused != nil {
			l.refused()
		}
		l.logf("httpd: connection refused: too many connections from one address", "client", ip, "limit", l.perIP)
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		c.Write(tooManyConnsResponse)
		c.Close()
		return nil, false
	}
	l.open[ip]++
	l.mu.Unlock()
	return &trackedConn{Conn: c, release: func() {
		l.mu.Lock()
		if l.open[ip]--; l.open[ip] <= 0 {
			delete(l.open, ip)
		}
		l.mu.Unlock()
	}}, true
}

// Close closes the listener and interrupts a retry wait in Accept.
func (l *guardedListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// logf logs a warning, at most once a second: under a connection flood the
// log must not become the next thing to fill the disk.
func (l *guardedListener) logf(msg string, args ...any) {
	l.mu.Lock()
	now := time.Now()
	if now.Sub(l.lastLog) < time.Second {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := l.suppressed
	l.lastLog, l.suppressed = now, 0
	l.mu.Unlock()
	l.log.Warn(msg, append(args, "suppressed_since_last", suppressed)...)
}

// temporaryAcceptError reports whether an accept error is about the moment
// (descriptors or memory exhausted, a connection aborted before it was
// accepted) rather than the listener itself.
func temporaryAcceptError(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED,
		syscall.ECONNRESET, syscall.EPROTO, syscall.EPERM, syscall.ETIMEDOUT, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// clientIP is the host part of a remote address.
func clientIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// trackedConn is an accepted connection counted against its client address
// until it is closed.
type trackedConn struct {
	net.Conn
	once    sync.Once
	release func()
	linger  atomic.Bool // see lingerOnClose
}

func (c *trackedConn) Close() error {
	if c.linger.CompareAndSwap(true, false) {
		if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
			go c.lingerClose(cw)
			return nil
		}
	}
	c.once.Do(c.release)
	return c.Conn.Close()
}

// Bounds of a lingering close: how long, and how many bytes, the rest of a
// refused request is read before the connection is closed anyway.
const (
	lingerTime  = 5 * time.Second
	lingerBytes = 256 << 20
)

// lingerOnClose makes the server's close of c lingering: after the answer,
// the write side is shut (the client reads the answer, then end of stream)
// and what the client still sends is read and discarded, within lingerTime
// and lingerBytes, before the socket is closed. Closing a socket with unread
// input sends a reset, which discards the answer at the client before it is
// read; clients that send the whole body before reading (Python's requests
// and httpx, Node's fetch) then saw "connection reset" instead of a 413.
func lingerOnClose(c net.Conn) {
	if tc, ok := c.(*trackedConn); ok {
		tc.linger.Store(true)
	}
}

func (c *trackedConn) lingerClose(cw interface{ CloseWrite() error }) {
	cw.CloseWrite()
	c.Conn.SetReadDeadline(time.Now().Add(lingerTime))
	io.CopyN(io.Discard, c.Conn, lingerBytes)
	c.once.Do(c.release)
	c.Conn.Close()
}

// SyscallConn exposes the socket, so that a waiting request can check
// whether its client has gone (see clientGone).
func (c *trackedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("httpd: connection has no file descriptor")
	}
	return sc.SyscallConn()
}
