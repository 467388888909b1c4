package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/loci-memory/loci/engine/verify"
)

func runVerify(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	data := fs.String("data", envOr("LOCI_DATA_DIR", "./loci-data"), "data directory to check")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if done, err := parseFlags(fs, args); done {
		return err
	}
	r, err := verify.Dir(*data)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(r)
	} else {
		fmt.Printf("data directory %s\n", *data)
		fmt.Printf("  segments    %d\n  wal files   %d (%d records)\n  artifacts   %d\n  spans       %d\n  tombstones  %d\n  bytes       %d\n",
			r.Segments, r.WALFiles, r.WALRecords, r.Artifacts, r.Spans, r.Tombstones, r.Bytes)
		for _, w := range r.Warnings {
			fmt.Println("warning:", w)
		}
		for _, f := range r.Faults {
			fmt.Println("FAULT:", f)
		}
		if len(r.Faults) == 0 {
			fmt.Println("ok: no faults")
		}
	}
	if len(r.Faults) > 0 {
		return exitCode(1)
	}
	return nil
}
