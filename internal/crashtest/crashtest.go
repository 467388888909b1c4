// Package crashtest is crash-test support. Round runs one round of a crash
// test: the test binary again as a child process that changes durable state
// and prints a line for each change it has acknowledged, killed with SIGKILL
// at a chosen moment. FS is a file system that loses power at a chosen
// operation, for the strict crash tests.
package crashtest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Round starts the running test binary as a child (running no tests; its
// TestMain must see env and act as the child), waits for it to print
// "ready", hands every later line to record, SIGKILLs it after killAfter,
// hands over the lines it printed before the kill landed, and reaps it.
func Round(t testing.TB, env []string, killAfter time.Duration, record func(line string)) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4096)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if l := <-lines; l != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q; stderr: %s", l, stderr.String())
	}
	kill := time.After(killAfter)
	for killed := false; !killed; {
		select {
		case <-kill:
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("child exited before it was killed; stderr: %s", stderr.String())
			}
			record(l)
		}
	}
	for l := range lines { // acknowledged before the kill landed
		record(l)
	}
	cmd.Wait()
}
