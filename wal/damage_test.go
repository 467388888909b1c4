package wal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// damageLog writes a one-file log of records of assorted sizes and returns
// its bytes, the offsets of its records and their sizes.
func damageLog(t *testing.T) (data []byte, offs []int64, sizes []int) {
	sizes = []int{5, 0, 30, 1, 200, 17, 64, 3, 90, 12, 0, 41}
	dir := writeLog(t, sizes...)
	path := walPath(dir, 1)
	return mustReadFile(t, path), offsets(t, path), sizes
}

// recordAt returns the index of the record whose frame holds byte off, or
// -1 for the file header.
func recordAt(offs []int64, off int64) int {
	k := -1
	for i, o := range offs {
		if o <= off {
			k = i
		}
	}
	return k
}

// checkDamage opens a log whose only file is data with the byte at off
// XORed with mask, and checks the rule: damage inside the last record is cut
// as a torn tail, leaving every earlier record; damage anywhere else has a
// valid record after it and makes Open fail, naming file and the offset of
// the damaged record, without changing the file.
func checkDamage(t *testing.T, data []byte, offs []int64, sizes []int, off int64, mask byte) {
	t.Helper()
	dir := t.TempDir()
	path := walPath(dir, 1)
	b := bytes.Clone(data)
	b[off] ^= mask
	mustWriteFile(t, path, b)
	k := recordAt(offs, off)
	opts, _ := testOptions()
	var recs []Record
	l, err := Open(dir, 1, 0, opts, collect(&recs))
	if k == len(offs)-1 { // the last record: indistinguishable from a torn write
		if err != nil {
			t.Fatalf("flip %#x at %d (last record): Open: %v", mask, off, err)
		}
		defer mustClose(t, l)
		checkRecords(t, recs, 1, sizes[:k])
		if got := fileSize(t, path); got != offs[k] {
			t.Fatalf("flip %#x at %d: file is %d bytes, want cut to %d", mask, off, got, offs[k])
		}
		return
	}
	if err == nil {
		l.Close()
		t.Fatalf("flip %#x at %d (record %d of %d): Open succeeded with %d records, want a corruption error", mask, off, k, len(offs), len(recs))
	}
	if k < 0 { // the file header: a bad magic is corruption, a bad version is refused as unsupported
		if !bytes.Equal(mustReadFile(t, path), b) {
			t.Fatalf("flip %#x at %d: Open changed the file", mask, off)
		}
		return
	}
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.File != path || ce.Offset != offs[k] || ce.Next <= ce.Offset {
		t.Fatalf("flip %#x at %d (record %d at %d): Open error %v, want a corruption error naming %s, offset %d and a later valid record",
			mask, off, k, offs[k], err, path, offs[k])
	}
	if !bytes.Equal(mustReadFile(t, path), b) {
		t.Fatalf("flip %#x at %d: Open changed the file", mask, off)
	}
	// ScanFile, which verify uses, tells the same story.
	serr := ScanFile(path, func(int64, Record) error { return nil })
	var se *CorruptionError
	if !errors.As(serr, &se) || se.Offset != ce.Offset || se.Next != ce.Next {
		t.Fatalf("flip %#x at %d: ScanFile says %v, Open says %v", mask, off, serr, err)
	}
}

// TestFlipEveryOffset flips a bit at every byte of the file: each flip in
// any record but the last must make Open refuse instead of cutting
// acknowledged records.
func TestFlipEveryOffset(t *testing.T) {
	data, offs, sizes := damageLog(t)
	for off := int64(0); off < int64(len(data)); off++ {
		for _, mask := range []byte{0x01, 0x80} {
			checkDamage(t, data, offs, sizes, off, mask)
		}
	}
}

// TestFlipRandom flips random bytes with random masks, seeded so a failure
// reproduces.
func TestFlipRandom(t *testing.T) {
	data, offs, sizes := damageLog(t)
	rng := rand.New(rand.NewPCG(9, 3))
	for range 2000 {
		off := rng.Int64N(int64(len(data)))
		mask := byte(rng.IntN(255) + 1)
		checkDamage(t, data, offs, sizes, off, mask)
	}
}

// TestTornLastRecord builds the tails a crash can leave at the end of the
// last file, and checks each is cut, not refused: the final record cut at
// every offset, its length written without its payload, and its bytes
// zeroed (a file extended whose data never reached the disk), alone or with
// zeros beyond.
func TestTornLastRecord(t *testing.T) {
	data, offs, sizes := damageLog(t)
	last := offs[len(offs)-1]
	tails := map[string][]byte{}
	for cut := last + 1; cut < int64(len(data)); cut++ {
		tails[fmt.Sprintf("cut at %d", cut)] = data[:cut]
	}
	zeroed := bytes.Clone(data)
	clear(zeroed[last+recordHeaderSize:])
	tails["payload zeroed"] = zeroed
	tails["payload zeroed, zeros beyond"] = append(bytes.Clone(zeroed), make([]byte, 5000)...)
	allZero := bytes.Clone(data)
	clear(allZero[last:])
	tails["frame zeroed"] = append(allZero, make([]byte, 300)...)
	headerOnly := append(bytes.Clone(data[:last+recordHeaderSize]), make([]byte, 3)...)
	tails["length without payload"] = headerOnly
	for name, b := range tails {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			mustWriteFile(t, walPath(dir, 1), b)
			checkTruncated(t, dir, last, sizes[:len(sizes)-1])
		})
	}
}

// TestFlipInEarlierRecordOfLaterFile damages the last file of two, after
// file 1, where the sequence numbers continue from file 1.
func TestFlipInLastOfTwoFiles(t *testing.T) {
	dir := t.TempDir()
	opts, _ := testOptions()
	l, _ := mustOpen(t, dir, 1, 0, opts)
	mustAppend(t, l, payloadFor(1, 10))
	if _, err := l.Rotate(nil); err != nil {
		t.Fatal(err)
	}
	for seq := uint64(2); seq <= 6; seq++ {
		mustAppend(t, l, payloadFor(seq, 20))
	}
	mustClose(t, l)
	path := walPath(dir, 2)
	offs := offsets(t, path)
	b := mustReadFile(t, path)
	b[offs[1]+recordHeaderSize+3] ^= 0x10
	mustWriteFile(t, path, b)
	_, err := Open(dir, 1, 0, opts, func(Record) error { return nil })
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.File != path || ce.Offset != offs[1] || ce.Next != offs[2] {
		t.Fatalf("Open = %v, want corruption of %s at %d followed by %d", err, path, offs[1], offs[2])
	}
}
