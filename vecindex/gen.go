package vecindex

// The int8 kernels in dot_amd64.s (and their stubs in dot_amd64.go) are
// generated with avo from internal/asmgen, a module of its own so that avo
// stays out of Loci's go.mod.

//go:generate go run -C internal/asmgen . -out ../../dot_amd64.s -stubs ../../dot_amd64.go -pkg vecindex
