// Command loci runs the Loci memory service and its tools.
//
//	loci serve   [flags]          run the HTTP service
//	loci mcp     [flags]          serve the Model Context Protocol over stdio, engine embedded
//	loci verify  --data DIR       check every checksum and cross-reference of a data directory
//	loci reindex --data DIR --embedder NAME   rebuild every vector with another embedder
//	loci backup  --data DIR --out PATH        copy a running server's data, crash-consistent
//	loci restore --from PATH --data DIR       bring a backup back
//	loci export|import                        a workspace as JSON Lines
//	loci embed   --in FILE --out FILE         add span vectors to an export, for import --vectors
//	loci bench   ingest|restart|search|pack   measure the engine and the service
//	loci eval    beir|locomo      measure retrieval and packing quality
//	loci version
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

const usage = `usage: loci <command> [flags]

commands:
  serve    run the HTTP service (loci serve --help lists its settings)
  mcp      serve the Model Context Protocol over stdio for one MCP client: loci mcp --data DIR
  verify   check a data directory: loci verify --data DIR [--json]
  reindex  rebuild the vectors with another embedder: loci reindex --data DIR --embedder minilm|glove|openai|none
  bench    run a benchmark: loci bench ingest|restart|search|pack [flags] (--help for flags)
  eval     measure quality: loci eval beir|locomo [flags] [--json]
  torture  kill -9 a loaded server again and again, check nothing acknowledged is lost: loci torture [--rounds N] [--seed S]
  backup   copy a running server's data directory, crash-consistently: loci backup --data DIR --out PATH
  restore  bring a backup back into an empty directory: loci restore --from PATH --data DIR
  export   write a workspace as JSON Lines (server stopped): loci export --data DIR --workspace W --out FILE.jsonl
  import   read an export into a stopped data directory: loci import --data DIR --in FILE.jsonl [--vectors]
  embed    add span vectors to an export, anywhere, for import --vectors: loci embed --in FILE.jsonl --out FILE.jsonl
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
	case "mcp":
		err = runMCP(args)
	case "verify":
		err = runVerify(args)
	case "reindex":
		err = runReindex(args)
	case "bench":
		err = runBench(args)
	case "eval":
		err = runEval(args)
	case "torture":
		err = runTorture(args)
	case "backup":
		err = runBackup(args)
	case "restore":
		err = runRestore(args)
	case "export":
		err = runExport(args)
	case "import":
		err = runImport(args)
	case "embed":
		err = runEmbed(args)
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

// parseFlags parses args into fs. done says the command must stop: after
// --help (err nil; the usage went to stdout, as asked for), or on a bad
// flag (err exitCode(2); why and the usage went to fs's output, stderr).
func parseFlags(fs *flag.FlagSet, args []string) (done bool, err error) {
	out := fs.Output()
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	err = fs.Parse(args)
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Stdout.Write(msg.Bytes())
			return true, nil
		}
		out.Write(msg.Bytes())
		return true, exitCode(2)
	}
	return false, nil
}

// intList parses the comma-separated integers of flag name, each in [lo, hi].
func intList(name, s string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("--%s: %q is not an integer from %d to %d", name, f, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}
