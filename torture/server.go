package torture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// server is one run of `loci serve` as a child process.
type server struct {
	cmd    *exec.Cmd
	stderr *tailBuffer
	exited chan struct{} // closed when the process has been reaped
	err    error         // Wait's result, set before exited closes
	killed bool          // we sent SIGKILL (or SIGTERM): an exit is expected
	mu     sync.Mutex
}

// startServer starts bin serve on addr over dir with the admin key, and
// waits until /health answers 200.
func startServer(cfg *Config, addr, adminKey string) (*server, error) {
	args := []string{"serve", "--addr", addr, "--data", cfg.DataDir,
		"--flush-threshold-mb", strconv.Itoa(cfg.FlushMB)}
	if cfg.Embedder != "" {
		args = append(args, "--embedder", cfg.Embedder)
	}
	cmd := exec.Command(cfg.Bin, args...)
	cmd.Env = append(filteredEnv(), "API_KEY="+adminKey)
	if cfg.provider != nil {
		cmd.Env = append(cmd.Env, cfg.provider.env()...)
	}
	s := &server{cmd: cmd, stderr: &tailBuffer{max: 16 << 10}, exited: make(chan struct{})}
	cmd.Stdout = s.stderr
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Bin, err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(cfg.StartTimeout)
	for {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("loci serve exited during start (%v); its log ends:\n%s", s.err, s.stderr.String())
		default:
		}
		resp, err := hc.Get("http://" + addr + "/health")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("loci serve not healthy after %v; its log ends:\n%s", cfg.StartTimeout, s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// filteredEnv is the environment without the server settings the harness
// sets itself, so a caller's shell cannot change what is tested.
func filteredEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "API_KEY", "LOCI_ADDR", "LOCI_DATA_DIR", "LOCI_FSYNC", "ASYNC_INDEXING", "OPEN_REGISTRATION", "MAX_REQUEST_SIZE_BYTES", "LOCI_EMBEDDER":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// kill sends SIGKILL and reaps the process.
func (s *server) kill() {
	s.mu.Lock()
	s.killed = true
	s.mu.Unlock()
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// stop asks for a graceful shutdown and returns the exit error (nil for
// status 0), killing the process after timeout.
func (s *server) stop(timeout time.Duration) error {
	s.mu.Lock()
	s.killed = true
	s.mu.Unlock()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return s.err
	case <-time.After(timeout):
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
		return fmt.Errorf("no exit %v after SIGTERM (killed)", timeout)
	}
}

// exitedUnasked reports whether the process ended without being told to.
func (s *server) exitedUnasked() bool {
	select {
	case <-s.exited:
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.killed
	default:
		return false
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// runVerify runs `loci verify` on dir and returns an error naming every fault
// it reports (or its failure to run).
func runVerify(bin, dir string) error {
	var out bytes.Buffer
	cmd := exec.Command(bin, "verify", "--data", dir)
	cmd.Env = filteredEnv()
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil || strings.Contains(out.String(), "FAULT") {
		return fmt.Errorf("loci verify --data %s: %v:\n%s", dir, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// Event kinds: the file events a round can kill the server right after, and
// "random" for a kill after a random delay.
const (
	EventRandom    = "random"
	EventSegment   = "segment"    // a segment renamed into segments/
	EventManifest  = "manifest"   // MANIFEST replaced (renamed into place)
	EventControl   = "control"    // CONTROL replaced
	EventWALCreate = "wal-create" // a WAL file created
	EventWALDelete = "wal-delete" // a WAL file deleted
)

// AllEvents lists every kill point kind.
var AllEvents = []string{EventRandom, EventSegment, EventManifest, EventControl, EventWALCreate, EventWALDelete}

// watcher reports file events in a data directory through inotify, from
// outside the server: the product has no hooks for the harness.
type watcher struct {
	fd    int
	wds   map[int32]string // watch descriptor -> directory role ("", "segments", "wal")
	stop  chan struct{}
	done  chan struct{}
	event chan string
}

// watch starts watching dir's top level, segments/ and wal/ for the kinds
// of event that matter, sending each as an Event* name on the returned
// watcher's event channel (dropped when nobody is listening).
func watch(dir string) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify init: %w", err)
	}
	w := &watcher{fd: fd, wds: map[int32]string{}, stop: make(chan struct{}), done: make(chan struct{}), event: make(chan string, 64)}
	for _, d := range []struct {
		role string
		mask uint32
	}{{"", unix.IN_MOVED_TO}, {"segments", unix.IN_MOVED_TO}, {"wal", unix.IN_CREATE | unix.IN_DELETE}} {
		wd, err := unix.InotifyAddWatch(fd, filepath.Join(dir, d.role), d.mask)
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("inotify watch %s: %w", filepath.Join(dir, d.role), err)
		}
		w.wds[int32(wd)] = d.role
	}
	go w.loop()
	return w, nil
}

func (w *watcher) loop() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		n, err := unix.Poll(fds, 50)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if n <= 0 {
			continue
		}
		n, err = unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			continue
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			name := string(bytes.TrimRight(nameBytes, "\x00"))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if kind := classify(w.wds[ev.Wd], name, ev.Mask); kind != "" {
				select {
				case w.event <- kind:
				default:
				}
			}
		}
	}
}

// classify names the event kind of an inotify event, or "" for one that is
// not a kill point.
func classify(role, name string, mask uint32) string {
	switch {
	case role == "" && mask&unix.IN_MOVED_TO != 0 && name == "MANIFEST":
		return EventManifest
	case role == "" && mask&unix.IN_MOVED_TO != 0 && name == "CONTROL":
		return EventControl
	case role == "segments" && mask&unix.IN_MOVED_TO != 0 && strings.HasSuffix(name, ".seg"):
		return EventSegment
	case role == "wal" && mask&unix.IN_CREATE != 0 && strings.HasSuffix(name, ".wal"):
		return EventWALCreate
	case role == "wal" && mask&unix.IN_DELETE != 0 && strings.HasSuffix(name, ".wal"):
		return EventWALDelete
	}
	return ""
}

// drain discards events already queued (from before the watcher was armed).
func (w *watcher) drain() {
	for {
		select {
		case <-w.event:
		default:
			return
		}
	}
}

// waitFor returns when an event of kind arrives (true) or ctx ends (false).
func (w *watcher) waitFor(ctx context.Context, kind string) bool {
	for {
		select {
		case k := <-w.event:
			if k == kind {
				return true
			}
		case <-ctx.Done():
			return false
		}
	}
}

func (w *watcher) close() {
	close(w.stop)
	<-w.done
	unix.Close(w.fd)
}
