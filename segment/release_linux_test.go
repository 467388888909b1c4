//go:build linux

package segment

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/artifact"
)

// residentKB returns the Rss of the process's mapping of path, from
// /proc/self/smaps.
func residentKB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in, found, kb := false, false, 0
	for sc.Scan() {
		line := sc.Text()
		// A mapping's header starts with its address range; anonymous
		// mappings have no path.
		if fields := strings.Fields(line); len(fields) >= 5 && isRange(fields[0]) {
			in = len(fields) >= 6 && fields[5] == path
			found = found || in
			continue
		}
		if v, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatalf("smaps Rss line %q: %v", line, err)
			}
			kb += n
		}
	}
	if !found {
		t.Fatalf("no mapping of %s in /proc/self/smaps", path)
	}
	return kb
}

func isRange(s string) bool {
	lo, hi, ok := strings.Cut(s, "-")
	_, err1 := strconv.ParseUint(lo, 16, 64)
	_, err2 := strconv.ParseUint(hi, 16, 64)
	return ok && err1 == nil && err2 == nil
}

// TestOpenLeavesNothingResident: Open checks the checksum of 8 MiB of
// sections through the mapping, and the pages it read do not stay in the
// process's resident set; reading a section afterwards maps it back.
func TestOpenLeavesNothingResident(t *testing.T) {
	dir := t.TempDir()
	a := &artifact.Artifact{ID: uuid.New(), Tenant: "t", Workspace: "w", Seq: 1, Type: "note", Payload: []byte(`"x"`)}
	a.ContentHash = artifact.ContentHash(a.Payload)
	vec := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 1<<20)
	ws := []WorkspaceData{{Tenant: "t", Workspace: "w", Artifacts: []*artifact.Artifact{a},
		Sections: []Section{{Kind: KindVectors, Data: vec}}}}
	if _, err := Write(dir, 1, ws); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName(1))
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Without the release, all of it is.
	if kb := residentKB(t, path); kb > 64 {
		t.Fatalf("after Open, %d KiB of the 8 MiB file resident", kb)
	}
	got, ok := s.Section(0, KindVectors)
	if !ok || !bytes.Equal(got, vec) {
		t.Fatal("vectors differ after Open released the pages")
	}
	if kb := residentKB(t, path); kb < 4096 {
		t.Fatalf("after reading the section, only %d KiB resident", kb)
	}
}
