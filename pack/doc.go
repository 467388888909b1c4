// Package pack is Loci's context packer: given a query, a token budget and
// the candidate spans retrieval gathered (plus the workspace's pinned
// spans), [Pack] decides which evidence goes into the pack, lays it out as
// prompt-ready text with [cite:N] markers, and explains every decision:
// citations, exclusions with one reason each, conflicts, confidence and
// abstention, token accounting and a pack hash.
//
// Package retrieval gathers the candidates and the engine stores them and
// their ids; this package makes the decisions, and only them. Pack is a pure function of its inputs: it reads
// no clock, iterates no map, starts no goroutine, and does not depend on
// the order of its input slices, so the same request on the same data gives
// a byte-identical pack.
//
// docs/pack.md describes the pipeline, the layout, and every formula,
// threshold and default.
package pack
