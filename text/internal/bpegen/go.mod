module github.com/loci-memory/loci/text/internal/bpegen

go 1.26

require (
	github.com/klauspost/compress v1.20.3
	github.com/pkoukk/tiktoken-go-loader v0.0.2
)
