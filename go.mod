module github.com/loci-memory/loci

go 1.26

require (
	github.com/RoaringBitmap/roaring/v2 v2.30.0
	github.com/dlclark/regexp2 v1.10.0
	github.com/edsrzf/mmap-go v1.2.0
	github.com/google/uuid v1.6.0
	github.com/klauspost/compress v1.20.3
	github.com/leanovate/gopter v0.2.11
	github.com/pkoukk/tiktoken-go v0.1.8
	github.com/pkoukk/tiktoken-go-loader v0.0.2
	github.com/valyala/fasthttp v1.74.0
	go.yaml.in/yaml/v4 v4.0.0
	golang.org/x/sys v0.47.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/molecule-man/go-brrr v1.0.1 // indirect
	github.com/mschoch/smat v0.2.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
)
