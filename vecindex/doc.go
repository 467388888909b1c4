// Package vecindex is the index of Loci's semantic channel: int8
// quantization, an int8 dot-product kernel (SIMD with a pure-Go fallback),
// exact top-k search over the head's and segments' vectors, and IVF search
// for large workspaces over centroids that belong to the embedder's model
// (ivf.go). Neither may make packs depend on index layout: exact search
// scores every document, and IVF's candidates are a pure function of the
// documents and the query. It knows vectors, not embedders (those are
// embed.Embedder implementations), apart from the centroids it ships for
// the built-in encoder's model.
package vecindex
