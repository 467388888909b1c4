// Package proctest runs Loci as a child process in tests (tests only): the
// loci binary built once per test binary, a free loopback port, a child
// that cannot outlive the test (killed at cleanup, and by the kernel when
// the test binary dies: PR_SET_PDEATHSIG), and the tail of its log for
// failure messages.
package proctest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

var (
	buildOnce sync.Once
	binDir    string
	bin       string
	buildErr  error
)

// Main runs a test binary's tests and then removes the binary Loci built:
// call it from TestMain (func TestMain(m *testing.M) { proctest.Main(m) }).
func Main(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// Loci returns the path of the loci binary built from this module's
// cmd/loci, once per test binary, into a temporary directory (Main removes
// it).
func Loci(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "loci-test-bin-"); buildErr != nil {
			return
		}
		out := filepath.Join(binDir, "loci")
		cmd := exec.Command("go", "build", "-o", out, "github.com/loci-memory/loci/cmd/loci")
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/loci: %v\n%s", err, b)
			return
		}
		bin = out
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

// FreeAddr returns a loopback address (127.0.0.1:port) whose port was free
// a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// DieWithParent makes cmd's process get SIGKILL when the thread that starts it
// ends (the test binary exits or is killed before any cleanup runs). Call
// it before cmd.Start.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// Start starts cmd (DieWithParent) and kills it when the test ends, also when it
// fails midway (a process stopped or killed already makes that a no-op).
func Start(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
}

// Tail is the end of a child's log s for a failure message: its last n
// bytes, from the first line that starts in them.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if k := strings.IndexByte(s, '\n'); k >= 0 {
		s = s[k+1:]
	}
	return s
}
