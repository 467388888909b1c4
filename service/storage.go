package service

import "github.com/loci-memory/loci/engine"

// Engines returns the engines of the data plane: the one engine, or those
// of the shards a cluster node serves now. What watches storage
// (telemetry's gauges) reads them.
func (s *Service) Engines() []*engine.DB { return s.shards.Engines() }

// Health is nil when every engine can take writes, else the first failing
// engine's error (a full disk, a failed WAL).
func (s *Service) Health() error {
	for _, db := range s.shards.Engines() {
		if err := db.Health(); err != nil {
			return err
		}
	}
	return nil
}

// StorageStats is the engine's counters; over the shards of a cluster node,
// their sum (engine.Stats.Add), so that they have one shape in both modes.
func (s *Service) StorageStats() engine.Stats {
	if one, ok := s.shards.(oneEngine); ok {
		return one.db.Stats()
	}
	var st engine.Stats
	for _, db := range s.shards.Engines() {
		st.Add(db.Stats())
	}
	return st
}
