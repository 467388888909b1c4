package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/loci-memory/loci/internal/proctest"
)

// TestMCPStdioSurvivesMalformedLines runs the real `loci mcp` and writes
// lines to its stdin: a line that is not JSON, not UTF-8, an empty batch or
// a batch over the limit is answered with a JSON-RPC error (parse error
// -32700, invalid request -32600) and the session goes on serving the next
// lines; it used to end the session and the process at the first one.
func TestMCPStdioSurvivesMalformedLines(t *testing.T) {
	bin := proctest.Loci(t)
	cmd := exec.Command(bin, "mcp", "--data", t.TempDir(), "--embedder", "none")
	cmd.Env = append(cmd.Environ(), "API_KEY=", "LOCI_API_KEY=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	proctest.Start(t, cmd)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// exchange writes line and returns the answer line.
	exchange := func(line string) string {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("write %q: %v (stderr: %s)", line, err, stderr.String())
		}
		select {
		case ans, ok := <-lines:
			if !ok {
				t.Fatalf("after %q: the process closed stdout (stderr: %s)", line, stderr.String())
			}
			return ans
		case <-time.After(30 * time.Second):
			t.Fatalf("after %q: no answer", line)
		}
		return ""
	}
	type answer struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	for _, c := range []struct {
		line string
		code int
		want string
	}{
		{`{not json`, -32700, "is not JSON"},
		{`[]`, -32600, "empty batch"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\"}", -32700, "not valid UTF-8 at byte 45"},
		{`"ping"`, -32600, "a JSON-RPC message is a JSON object"},
		{`{"id":1}`, -32600, "invalid request"},
		{"[" + strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"},`, 32) + `{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600, "a batch of 33 messages exceeds the limit of 32"},
		{`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, 0, `"protocolVersion":"2025-03-26"`},
		{`{not json either`, -32700, "is not JSON"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, 0, `"name":"remember"`},
		{`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"ping"}]`, 0, `"id":5`},
	} {
		ans := exchange(c.line)
		if c.code == 0 {
			if !strings.Contains(ans, c.want) || strings.Contains(ans, `"error"`) {
				t.Fatalf("%.60q: %s", c.line, ans)
			}
			continue
		}
		var a answer
		if err := json.Unmarshal([]byte(ans), &a); err != nil || a.Error == nil || a.Error.Code != c.code || !strings.Contains(a.Error.Message, c.want) {
			t.Fatalf("%.60q: %s, want error %d mentioning %q", c.line, ans, c.code, c.want)
		}
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("loci mcp: %v (stderr: %s)", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("loci mcp did not exit when its input ended")
	}
}
