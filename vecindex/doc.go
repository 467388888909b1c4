// Package vecindex is the index of Loci's semantic channel: int8
// quantization, an int8 dot-product kernel (SIMD with a pure-Go fallback),
// and exact top-k search over the head's and segments' vectors. Search is
// exact, never approximate: packs must not depend on index layout. It knows
// vectors, not embedders (those are embed.Embedder implementations).
package vecindex
