// Command loci runs the Loci memory service and its tools.
//
//	loci serve   [flags]          run the HTTP service
//	loci verify  --data DIR       check every checksum and cross-reference of a data directory
//	loci bench   ingest|restart   measure the engine
//	loci eval    beir             measure retrieval quality
//	loci version
package main

import (
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `usage: loci <command> [flags]

commands:
  serve    run the HTTP service (loci serve --help lists its settings)
  verify   check a data directory: loci verify --data DIR [--json]
  bench    run a benchmark: loci bench ingest|restart [flags] (--help for flags)
  eval     measure retrieval quality: loci eval beir --data DIR [--json]
  version  print the version
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "serve":
		err = runServe(args)
	case "verify":
		err = runVerify(args)
	case "bench":
		err = runBench(args)
	case "eval":
		err = runEval(args)
	case "version", "--version", "-v":
		fmt.Println("loci", version)
	case "help", "--help", "-h":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "loci: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		if ec, ok := err.(exitCode); ok {
			os.Exit(int(ec))
		}
		fmt.Fprintln(os.Stderr, "loci:", err)
		os.Exit(1)
	}
}

// exitCode is an error that only sets the exit status (its message is already printed).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
