package wal

import (
	"errors"
	"testing"

	"github.com/loci-memory/loci/vfs"
)

// TestAppendAt: caller-chosen sequence numbers with gaps survive a reopen,
// numbers already taken are refused, and a failed batch gives its numbers
// back so the same records can be appended at them again.
func TestAppendAt(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)
	at := func(first uint64, payloads ...string) error {
		var es []Entry
		for _, p := range payloads {
			es = append(es, Entry{Type: 1, Payload: []byte(p)})
		}
		got, err := l.AppendAt(first, es...)
		if err == nil && got != first {
			t.Fatalf("AppendAt(%d) returned %d", first, got)
		}
		return err
	}
	if err := at(1<<16, "a0", "a1"); err != nil {
		t.Fatal(err)
	}
	if err := at(5<<16, "b0"); err != nil {
		t.Fatal(err)
	}
	for _, first := range []uint64{0, 1, 1<<16 + 1, 5 << 16} {
		if err := at(first, "taken"); err == nil {
			t.Fatalf("AppendAt(%d) below NextSeq %d succeeded", first, l.NextSeq())
		}
	}
	eio := errors.New("injected EIO")
	failing := true
	l.syncFile = func(f vfs.File) error {
		if failing {
			return eio
		}
		return f.Sync()
	}
	if err := at(6<<16, "c0"); !errors.Is(err, eio) {
		t.Fatalf("AppendAt with a failing fsync: %v, want %v", err, eio)
	}
	if got := l.NextSeq(); got != 6<<16 {
		t.Fatalf("NextSeq after a failed AppendAt = %d, want the numbers back (%d)", got, 6<<16)
	}
	failing = false
	if err := at(6<<16, "c0"); err != nil {
		t.Fatalf("AppendAt again at the same numbers: %v", err)
	}
	mustClose(t, l)
	l, recs := mustOpen(t, dir, 1, 0, opts)
	defer mustClose(t, l)
	want := []struct {
		seq uint64
		p   string
	}{{1 << 16, "a0"}, {1<<16 + 1, "a1"}, {5 << 16, "b0"}, {6 << 16, "c0"}}
	if len(recs) != len(want) {
		t.Fatalf("after reopen: %d records, want %d", len(recs), len(want))
	}
	for i, w := range want {
		if recs[i].Seq != w.seq || string(recs[i].Payload) != w.p {
			t.Errorf("record %d: seq %d %q, want %d %q", i, recs[i].Seq, recs[i].Payload, w.seq, w.p)
		}
	}
	if got := l.NextSeq(); got != 6<<16+1 {
		t.Errorf("NextSeq after reopen = %d, want %d", got, 6<<16+1)
	}
}
