package engine

import "github.com/loci-memory/loci/engine/verify"

// VerifyReport is the outcome of Verify (verify.Report).
type VerifyReport = verify.Report

// Verify checks a closed data directory without changing it (verify.Dir):
// it takes the directory lock, so it refuses a directory a server has open.
func Verify(dir string) (*VerifyReport, error) { return verify.Dir(dir) }
