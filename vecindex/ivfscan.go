package vecindex

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// SearchIVF is Search restricted to the documents whose list (Assign) is
// among the nprobe lists nearest the query under centroids c: the same
// scores and order as Search over exactly those documents, so the answer
// depends on the documents and the query, not on how they are split into
// parts. It also returns how many documents it probed (their sketches
// bound or their rows scored; a part that does not know its lists: all of
// them). The parts must be of c's model and dim (a mismatch panics, as in
// Search). It is an IVFScan worked by the calling goroutine alone.
func SearchIVF(parts []Part, c *Centroids, q []int8, qscale float32, k, nprobe int) ([]Hit, int) {
	s := NewIVFScan(parts, c, q, qscale, k, nprobe)
	s.Work()
	probed := s.Probed()
	return s.Hits(), probed
}

// An IVFScan is a SearchIVF that several goroutines can share, as a Scan
// is a shared Search: each Work call takes jobs until none is left (a part
// that does not know its lists, scanned whole; a part's probed documents,
// scored; or, in the two-stage scan, a run of probed documents bounded
// from their sketches). In the two-stage scan the call that finishes the
// last job seeds its heap, and then every call rescores runs of the probed
// documents whose bounds reach that heap's k-th score. Hits merges what
// every call kept. The answer is SearchIVF's whatever the number of Work
// calls and however the jobs fall to them, by Scan's argument: each call
// keeps the top k of the documents it scored under the same total order,
// and a document left out by some call's k-th score ranks after k scored
// documents.
type IVFScan struct {
	parts    []Part
	c        *Centroids
	qscale   float32
	k        int
	jobDocs  int
	own      *searchState // the probe, the probed documents and their bounds
	probed   int
	twoStage bool
	jobs     []ivfJob // first pass
	rescores []ivfJob // the two-stage scan's second pass

	next        atomic.Int64 // index of the next job
	pending     atomic.Int64 // two-stage: first-pass jobs not yet done
	nextRescore atomic.Int64
	ready       chan struct{} // two-stage: closed once the heap is seeded
	floor       float64       // the seeding call's k-th exact score, or -Inf
	mu          sync.Mutex
	workers     []*searchState
}

// ivfJobKind is what a job does with its documents.
type ivfJobKind uint8

const (
	jobAssign     ivfJobKind = iota // scan the whole part, assigning (scanAssigning)
	jobScore                        // score the probed documents' rows, ascending
	jobBoundLists                   // bound lists [lists[0], lists[1]) from the part's sketch in list order
	jobBound                        // bound the probed documents, gathering their sketch rows
	jobRescore                      // the second pass: rescore the probed documents above the floor
)

// ivfJob is a run of one part's probed documents: own.cands[from:to].
type ivfJob struct {
	kind     ivfJobKind
	part     int
	from, to int
	lists    [2]int
}

// ivfJobDocs is about how many probed documents a job holds (a run of
// lists ends at the first list that reaches it): as a Scan's chunk.
const ivfJobDocs = scanChunkDocs

var ivfScanPool = sync.Pool{New: func() any { return new(IVFScan) }}

// NewIVFScan prepares a SearchIVF for Work calls: it probes the centroids
// and gathers the probed documents, which costs a pass over the lists of
// the parts. It panics as SearchIVF does on a query or part of the wrong
// dim. Hits returns the scan to a pool: it must not be used after.
func NewIVFScan(parts []Part, c *Centroids, q []int8, qscale float32, k, nprobe int) *IVFScan {
	return newIVFScan(parts, c, q, qscale, k, nprobe, ivfJobDocs)
}

// newIVFScan is NewIVFScan with jobs of about jobDocs documents.
func newIVFScan(parts []Part, c *Centroids, q []int8, qscale float32, k, nprobe, jobDocs int) *IVFScan {
	s := ivfScanPool.Get().(*IVFScan)
	s.parts, s.c, s.qscale, s.k, s.jobDocs = parts, c, qscale, k, jobDocs
	s.probed, s.twoStage, s.floor = 0, false, math.Inf(-1)
	s.jobs, s.rescores, s.ready = s.jobs[:0], s.rescores[:0], nil
	s.next.Store(0)
	s.pending.Store(0)
	s.nextRescore.Store(0)
	st := startSearch(parts, q, qscale, k)
	s.own = st
	if st == nil {
		return s
	}
	if c.Dim() != parts[0].Dim() {
		panic(fmt.Sprintf("BUG: vecindex.SearchIVF: centroids of dim %d, parts %d", c.Dim(), parts[0].Dim()))
	}
	mask := c.probeInto(st.q, nprobe, st)
	// The probed documents of every part that knows its lists, list by
	// list; a part that does not is scanned, assigning the rows that could
	// enter the heap.
	cands, off := st.cands[:0], append(st.candOff[:0], 0)
	scan := st.scan[:0]
	for _, p := range parts {
		var lists *ivfLists
		var assign []uint32
		if ip, ok := p.(ivfPart); ok {
			lists, assign = ip.ivfFor(c)
		}
		scan = append(scan, lists == nil && assign == nil)
		switch {
		case lists != nil:
			for l, on := range mask {
				if on {
					for _, d := range lists.docs[lists.offsets[l]:lists.offsets[l+1]] {
						cands = append(cands, int32(d))
					}
				}
			}
		case assign != nil:
			for d, a := range assign {
				if mask[a] {
					cands = append(cands, int32(d))
				}
			}
		default:
			s.probed += p.NumDocs()
		}
		off = append(off, len(cands))
	}
	st.cands, st.candOff, st.scan = cands, off, scan
	s.probed += len(cands)
	// Many documents are bounded from their sketches first (the two-stage
	// scan), few are scored at once.
	s.twoStage = useSketch && activeKernel.name != genericKernel.name && len(cands) > 0 && len(cands) >= minTwoStageDocs &&
		int64(len(cands)) >= int64(k)*int64(twoStageDocsPerHit)
	if s.twoStage {
		st.upper = slices.Grow(st.upper[:0], len(cands))[:len(cands)]
	}
	for pi, p := range parts {
		from, to := off[pi], off[pi+1]
		switch {
		case scan[pi]:
			s.jobs = append(s.jobs, ivfJob{kind: jobAssign, part: pi})
		case from == to:
		case !s.twoStage:
			s.jobs = append(s.jobs, ivfJob{kind: jobScore, part: pi, from: from, to: to})
		default:
			s.addBoundJobs(pi, p, from, to, mask)
			for at := from; at < to; at += s.jobDocs {
				s.rescores = append(s.rescores, ivfJob{kind: jobRescore, part: pi, from: at, to: min(at+s.jobDocs, to)})
			}
		}
	}
	if s.twoStage {
		s.pending.Store(int64(len(s.jobs)))
		s.ready = make(chan struct{})
	}
	return s
}

// addBoundJobs adds the first-pass jobs of part pi's probed documents
// cands[from:to] in the two-stage scan: runs of whole lists (of at least
// jobDocs documents but the last) bounded from the part's sketch in list
// order, or runs of documents whose sketch rows
// are gathered, or (a part without sketches) all of them scored.
func (s *IVFScan) addBoundJobs(pi int, p Part, from, to int, mask []bool) {
	if ls, ok := p.(listSketcher); ok {
		if sk, lists := ls.listSketchFor(s.c); sk != nil {
			// The probed lists, in list order as cands holds them, cut
			// into runs of about jobDocs documents.
			job := ivfJob{kind: jobBoundLists, part: pi, from: from, lists: [2]int{-1, 0}}
			at := from
			for l, on := range mask {
				if !on {
					continue
				}
				if job.lists[0] < 0 {
					job.lists[0] = l
				}
				at += int(lists.offsets[l+1] - lists.offsets[l])
				job.lists[1] = l + 1
				if at-job.from >= s.jobDocs {
					job.to = at
					s.jobs = append(s.jobs, job)
					job = ivfJob{kind: jobBoundLists, part: pi, from: at, lists: [2]int{-1, 0}}
				}
			}
			if at > job.from {
				job.to = at
				s.jobs = append(s.jobs, job)
			}
			return
		}
	}
	if _, ok := p.(sketcher); !ok {
		s.jobs = append(s.jobs, ivfJob{kind: jobScore, part: pi, from: from, to: to})
		return
	}
	for at := from; at < to; at += s.jobDocs {
		s.jobs = append(s.jobs, ivfJob{kind: jobBound, part: pi, from: at, to: min(at+s.jobDocs, to)})
	}
}

// Probed is how many documents the search probes (SearchIVF's second
// result); call it before Hits.
func (s *IVFScan) Probed() int { return s.probed }

// Work runs jobs until none is left. It may be called from any number of
// goroutines, before Hits.
func (s *IVFScan) Work() {
	if s.own == nil || int(s.next.Load()) >= len(s.jobs) && int(s.nextRescore.Load()) >= len(s.rescores) {
		return
	}
	st := joinSearch(s.parts, s.own.q, s.k, &s.mu, &s.workers)
	h := &st.heap
	own := s.own
	mask := own.mask
	for {
		j := int(s.next.Add(1)) - 1
		if j >= len(s.jobs) {
			break
		}
		job := s.jobs[j]
		p := s.parts[job.part]
		docs := own.cands[job.from:job.to]
		switch job.kind {
		case jobAssign:
			h.scanAssigning(job.part, p, st, s.qscale, s.c, mask)
		case jobScore:
			// Score their rows in ascending order, one forward sweep,
			// which the memory system streams far better than list by
			// list.
			docs = st.ascending(docs, p.NumDocs())
			for len(docs) > 0 {
				n := min(len(docs), searchBlock)
				h.scoreListed(job.part, p, st, s.qscale, docs[:n])
				docs = docs[n:]
			}
			if s.twoStage {
				for i := job.from; i < job.to; i++ {
					own.upper[i] = math.NaN()
				}
			}
		case jobBoundLists:
			sk, lists := p.(listSketcher).listSketchFor(s.c)
			up := own.upper[job.from:job.to]
			for l := job.lists[0]; l < job.lists[1]; l++ {
				if mask[l] {
					from, to := int(lists.offsets[l]), int(lists.offsets[l+1])
					bound(&sketch{rowBytes: sk.rowBytes, packed: sk.packed[from*sk.rowBytes : to*sk.rowBytes], ab: sk.ab[2*from : 2*to]}, st, s.qscale, up[:to-from])
					up = up[to-from:]
				}
			}
		case jobBound:
			boundGathered(p, st, s.qscale, docs, own.upper[job.from:job.to])
		}
		if s.twoStage && s.pending.Add(-1) == 0 {
			h.seedFrom(own.upper, &st.sample, func(t float64) {
				for _, r := range s.rescores {
					h.rescoreListed(r.part, s.parts[r.part], st, s.qscale, own.cands[r.from:r.to], own.upper[r.from:r.to], t)
				}
			})
			s.floor = h.floor()
			close(s.ready)
		}
	}
	if !s.twoStage {
		return
	}
	// Another call may still be running its last job: a short wait.
	<-s.ready
	for {
		j := int(s.nextRescore.Add(1)) - 1
		if j >= len(s.rescores) {
			return
		}
		r := s.rescores[j]
		h.rescoreListed(r.part, s.parts[r.part], st, s.qscale, own.cands[r.from:r.to], own.upper[r.from:r.to], s.floor)
	}
}

// Hits returns the top k hits, best first (see SearchIVF), once every Work
// call has returned, and puts the scan back in its pool.
func (s *IVFScan) Hits() []Hit {
	var out []Hit
	if s.own != nil {
		out = mergeWorkers(s.workers, s.k)
		s.own.heap.reset(0) // drops its references to the parts' keys
		searchPool.Put(s.own)
	}
	clear(s.workers)
	*s = IVFScan{jobs: s.jobs[:0], rescores: s.rescores[:0], workers: s.workers[:0]}
	ivfScanPool.Put(s)
	return out
}

// The two-stage scan over the probed documents (sketch.go's argument, on a
// subset): bound each from its sketch, score the highest bounds exactly to
// fill the heap, then score exactly every other document whose bound
// reaches the heap's k-th score. The heap only ever holds exact scores, so
// the answer is scoring every probed document's row, bit for bit; the rows
// read fall from every probed document's to about 2% of them, and the
// sketches read are half a row each.

// boundGathered sets up[i] to the bound of docs[i] of p, a part with a
// sketch in document order (NaN for a document never returned), gathering
// the documents' sketch rows block by block.
func boundGathered(p Part, st *searchState, qscale float32, docs []int32, up []float64) {
	if len(docs) == 0 {
		return
	}
	lo, hi := slices.Min(docs), slices.Max(docs)
	sk := p.(sketcher).sketchFor(int(lo), int(hi)+1)
	rb := sk.rowBytes
	scales := p.Scales()
	for blk := 0; blk < len(docs); blk += searchBlock {
		idx := docs[blk:min(blk+searchBlock, len(docs))]
		// Gather the block's sketch rows, and their two values, into one
		// run.
		g := st.gathered(len(idx), rb)
		for i, d := range idx {
			copy(g.packed[i*rb:(i+1)*rb], sk.packed[int(d)*rb:(int(d)+1)*rb])
			g.ab[2*i], g.ab[2*i+1] = sk.ab[2*d], sk.ab[2*d+1]
			if scales[d] == 0 {
				g.ab[2*i+1] = float32(math.NaN())
			}
		}
		bound(g, st, qscale, up[blk:blk+len(idx)])
	}
}

// rescoreListed scores exactly the probed documents docs of part pi whose
// bound (up, the same length) reaches floor and the heap's worst score
// (once the heap is full), and marks them scored.
func (h *topK) rescoreListed(pi int, p Part, st *searchState, qscale float32, docs []int32, up []float64, floor float64) {
	idx := st.survivors[:0]
	for i, u := range up {
		if u >= max(floor, h.floor()) {
			up[i] = math.NaN()
			if idx = append(idx, docs[i]); len(idx) == searchBlock {
				h.scoreListed(pi, p, st, qscale, idx)
				idx = idx[:0]
			}
		}
	}
	h.scoreListed(pi, p, st, qscale, idx)
	st.survivors = idx[:0]
}
