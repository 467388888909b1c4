package control

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/google/uuid"
)

var _ interface {
	SnapshotPayloads() ([]byte, uint64, bool)
	PayloadsWritten(uint64)
	RestorePayloads([]byte) error
} = (*Store)(nil) // engine.ControlPayloads

// payloadsVersion is the leading byte of the payloads encoding
// (docs/format/control.md § Payloads).
const payloadsVersion byte = 1

// SnapshotPayloads encodes the inputs of the unfinished jobs, which the
// snapshot leaves out so that it stays small whatever the backlog, and a
// generation that changes whenever they change. changed is false when the
// generation is the one last reported by PayloadsWritten: the engine then
// skips rewriting its payloads file.
//
// It may be taken after the snapshot it goes with: replay after a restart
// applies every record since the snapshot, which finishes any job whose
// input the newer payloads no longer hold, and creates with their inputs the
// jobs the snapshot does not hold yet.
func (s *Store) SnapshotPayloads() (b []byte, gen uint64, changed bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	gen = s.st.inputsGen
	if gen == s.payloadsWritten && s.payloadsKnown {
		return nil, gen, false
	}
	return s.st.encodePayloads(), gen, true
}

// PayloadsWritten records that the payloads of generation gen are durable.
func (s *Store) PayloadsWritten(gen uint64) {
	s.mu.Lock()
	s.payloadsWritten, s.payloadsKnown = gen, true
	s.mu.Unlock()
}

// RestorePayloads gives the restored snapshot's unfinished jobs their
// inputs; the engine calls it after RestoreControl, before replay. Entries
// of jobs the snapshot does not hold as unfinished are ignored (see
// SnapshotPayloads). A malformed encoding is an error and changes nothing.
func (s *Store) RestorePayloads(b []byte) error {
	entries, err := decodePayloads(b)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		if j := s.st.unfinished[e.id]; j != nil && j.input == nil {
			j.input = e.input
			s.st.addBacklog(j, 0, int64(len(e.input)))
		}
	}
	return nil
}

type payloadEntry struct {
	id    uuid.UUID
	input []byte
}

// encodePayloads: version | uvarint count | per unfinished job in creation
// order: uuid job id, bytes input.
func (s *state) encodePayloads() []byte {
	list := make([]*jobState, 0, len(s.unfinished))
	for _, j := range s.unfinished {
		list = append(list, j)
	}
	slices.SortFunc(list, compareJobs)
	b := binary.AppendUvarint([]byte{payloadsVersion}, uint64(len(list)))
	for _, j := range list {
		b = append(b, j.id[:]...)
		b = appendBytes(b, j.input)
	}
	return b
}

func decodePayloads(b []byte) ([]payloadEntry, error) {
	d := newDecoder("payloads", b)
	if v := d.Byte("version"); d.Err == nil && v != payloadsVersion {
		d.Failf("version", 0, "unsupported version %d", v)
	}
	n := d.Count("job count", 17)
	out := make([]payloadEntry, 0, n)
	seen := make(map[uuid.UUID]bool, n)
	for i := 0; i < n && d.Err == nil; i++ {
		at := d.Off
		e := payloadEntry{id: d.uuid("job id"), input: d.bytes("input")}
		if d.Err == nil && (e.id == uuid.Nil || seen[e.id]) {
			d.Failf("job id", at, "nil or repeated job id %s", e.id)
		}
		seen[e.id] = true
		out = append(out, e)
	}
	d.End("end")
	if d.Err != nil {
		return nil, fmt.Errorf("control: %w", d.Err)
	}
	return out, nil
}
