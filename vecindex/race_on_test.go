//go:build race

package vecindex

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are not checked.
const raceEnabled = true
