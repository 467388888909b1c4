package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/loci-memory/loci/engine/backup"
	"github.com/loci-memory/loci/engine/verify"
)

// runBackup copies a data directory, which a running server may hold, to a
// new directory as a crash-consistent snapshot (backup.Take).
func runBackup(args []string) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	data := fs.String("data", envOr("LOCI_DATA_DIR", "./loci-data"), "data directory to back up; the server may be running (env LOCI_DATA_DIR)")
	out := fs.String("out", "", "backup directory to create; must not exist or be empty (required)")
	link := fs.Bool("link", false, "hard-link segment and token-row files instead of copying them (same file system only; shares their disk blocks)")
	asJSON := fs.Bool("json", false, "print the backup's description (BACKUP.json) as JSON")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loci backup --data DIR --out PATH [--link] [--json]\n\n"+
			"Copies the data directory, without stopping the server, as a crash-consistent snapshot: the\n"+
			"backup is a state the directory could have been left in by a crash during the backup, and holds\n"+
			"everything acknowledged before the backup started. The backup is itself a data directory;\n"+
			"loci restore --from PATH --data DIR brings it back.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if *out == "" {
		fs.Usage()
		return exitCode(2)
	}
	info, err := backup.Take(*data, *out, backup.Options{Link: *link})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	fmt.Printf("backup of %s written to %s in %s: %d segments, %d WAL files (up to seq %d), %d bytes",
		*data, *out, info.FinishedAt.Sub(info.StartedAt).Round(time.Millisecond), info.Segments, info.WALFiles, info.LastSeq, info.Bytes)
	if info.TokenRowFiles > 0 {
		fmt.Printf(", %d token-row files", info.TokenRowFiles)
	}
	if info.Attempts > 1 {
		fmt.Printf(", %d attempts (maintenance raced the first)", info.Attempts)
	}
	fmt.Println()
	return nil
}

// runRestore brings a backup back into a new or empty data directory and
// verifies it.
func runRestore(args []string) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	from := fs.String("from", "", "backup directory written by loci backup (required)")
	data := fs.String("data", "", "data directory to restore into; must not exist or be empty (required)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: loci restore --from PATH --data DIR\n\n"+
			"Copies a backup into a new or empty data directory, checking every file against the backup's\n"+
			"BACKUP.json, then runs loci verify on the result. Start the server on DIR afterwards.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if done, err := parseFlags(fs, args); done {
		return err
	}
	if *from == "" || *data == "" {
		fs.Usage()
		return exitCode(2)
	}
	start := time.Now()
	if err := backup.Restore(*from, *data); err != nil {
		return err
	}
	r, err := verify.Dir(*data)
	if err != nil {
		return fmt.Errorf("restore: verify: %w", err)
	}
	for _, w := range r.Warnings {
		fmt.Println("warning:", w)
	}
	for _, f := range r.Faults {
		fmt.Println("FAULT:", f)
	}
	if len(r.Faults) > 0 {
		return fmt.Errorf("restored %s into %s, but verify found %d faults", *from, *data, len(r.Faults))
	}
	fmt.Printf("restored %s into %s in %s: %d segments, %d WAL records, %d artifacts; verify: no faults\n",
		*from, *data, time.Since(start).Round(time.Millisecond), r.Segments, r.WALRecords, r.Artifacts)
	return nil
}
