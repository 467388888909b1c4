package vecindex

// Part is one partition of a workspace's vectors, searched as a unit: the
// head's MemVectors or a segment's SegVectors. Documents are numbered
// 0..NumDocs()-1 in insertion order.
//
// The slices a Part returns alias its storage: callers must not modify them,
// and for a MemVectors they are valid only while the caller holds the lock
// that excludes Add.
type Part interface {
	// Model names the vector space; only parts of the query's model may be
	// searched together.
	Model() string
	// Dim is the vector length before padding.
	Dim() int
	// NumDocs is the number of documents.
	NumDocs() int
	// Rows holds the documents' int8 vectors, row-major, each padded with
	// zeros to Stride(Dim()) bytes: NumDocs()*Stride(Dim()) bytes.
	Rows() []int8
	// Scales holds the documents' quantization scales, NumDocs() of them,
	// each finite and >= 0; 0 marks a zero vector (no semantic signal).
	Scales() []float32
	// Keys holds the documents' keys, NumDocs() of them. They break score
	// ties (then the position: part, then doc). The engine's keys derive
	// from the spans' content (artifact.TieKey), so that ties do not depend on
	// random ids; equal keys are fine.
	Keys() [][16]byte
}

// Hit is one search result: document Doc of parts[Part], its Score and Key.
type Hit struct {
	Part  int
	Doc   uint32
	Score float64
	Key   [16]byte
}
