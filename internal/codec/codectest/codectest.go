// Package codectest is test support for decoders: it runs a table of
// decodes of damaged input and checks that each fails with an error that
// matches codec.ErrCorrupt.
package codectest

import (
	"errors"
	"testing"

	"github.com/loci-memory/loci/internal/codec"
)

// Case is one decode of damaged input.
type Case struct {
	Name   string
	Decode func() error
}

// ExpectCorrupt runs each case as a subtest: it fails the case when the
// decode succeeds or its error does not match codec.ErrCorrupt.
func ExpectCorrupt(t *testing.T, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			err := tc.Decode()
			if err == nil {
				t.Fatal("damaged input decoded without error")
			}
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("%v (%T) does not match codec.ErrCorrupt", err, err)
			}
		})
	}
}
