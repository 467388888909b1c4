package wal

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// logBuffer collects log output from any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testOptions returns options that log into a fresh buffer.
func testOptions() (Options, *logBuffer) {
	lb := new(logBuffer)
	return Options{Logger: lb.logger()}, lb
}

// payloadFor returns a deterministic payload of n bytes for seq.
func payloadFor(seq uint64, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(seq*31 + uint64(i)*7)
	}
	return p
}

// collect returns a replay func that appends copies of the records to *out.
func collect(out *[]Record) func(Record) error {
	return func(r Record) error {
		r.Payload = slices.Clone(r.Payload)
		if r.Payload == nil {
			r.Payload = []byte{}
		}
		*out = append(*out, r)
		return nil
	}
}

// mustOpen opens dir and returns the log and the replayed records.
func mustOpen(t testing.TB, dir string, first int, minSeq uint64, opts Options) (*Log, []Record) {
	t.Helper()
	var recs []Record
	l, err := Open(dir, first, minSeq, opts, collect(&recs))
	if err != nil {
		t.Fatalf("Open(%s, %d, %d): %v", dir, first, minSeq, err)
	}
	return l, recs
}

func mustClose(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// mustAppend appends one record of type 1 and returns its seq.
func mustAppend(t testing.TB, l *Log, payload []byte) uint64 {
	t.Helper()
	seq, err := l.Append(Entry{Type: 1, Payload: payload})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return seq
}

// writeLog creates a log in a new directory with one record of type 1 and
// the given payload size per element of sizes, and returns the directory.
func writeLog(t testing.TB, sizes ...int) string {
	t.Helper()
	dir := t.TempDir()
	opts, _ := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)
	for _, n := range sizes {
		seq := l.NextSeq()
		mustAppend(t, l, payloadFor(seq, n))
	}
	mustClose(t, l)
	return dir
}

// offsets returns the offset of every record in a clean log file.
func offsets(t testing.TB, path string) []int64 {
	t.Helper()
	var offs []int64
	if err := ScanFile(path, func(off int64, _ Record) error {
		offs = append(offs, off)
		return nil
	}); err != nil {
		t.Fatalf("ScanFile(%s): %v", path, err)
	}
	return offs
}

// checkRecords fails unless recs are seqs from, from+1, ... with the
// payloads payloadFor gives for sizes.
func checkRecords(t testing.TB, recs []Record, from uint64, sizes []int) {
	t.Helper()
	if len(recs) != len(sizes) {
		t.Fatalf("got %d records, want %d", len(recs), len(sizes))
	}
	for i, r := range recs {
		seq := from + uint64(i)
		if r.Seq != seq || r.Type != 1 || !bytes.Equal(r.Payload, payloadFor(seq, sizes[i])) {
			t.Fatalf("record %d: got seq %d type %d %d bytes, want seq %d type 1 %d bytes",
				i, r.Seq, r.Type, len(r.Payload), seq, sizes[i])
		}
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func walPath(dir string, index int) string { return filepath.Join(dir, FileName(index)) }

func mustReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustWriteFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func repeat(n, size int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = size
	}
	return s
}

func describe(r Record) string {
	return fmt.Sprintf("seq %d type %d len %d", r.Seq, r.Type, len(r.Payload))
}
