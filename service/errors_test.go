package service

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
)

// classifyCase is an error the service may return and what Classify says
// of it. name is the engine's or control's exported error it stands for
// (pkg.Name), or "" for the service's own and the standard library's.
type classifyCase struct {
	name   string
	err    error
	kind   Kind
	detail string
	retry  int
}

func classifyCases() []classifyCase {
	wrap := func(err error) error { return fmt.Errorf("while testing: %w", err) }
	conflict := &IdempotencyConflictError{Field: "idempotency_key", Key: "k", Workspace: "w",
		ArtifactID: uuid.MustParse("0b6f3c1e-0000-4000-8000-000000000001"), Differs: []string{"raw_payload"}}
	backpressure := &engine.BackpressureError{UnflushedBytes: 10}
	return []classifyCase{
		// The service's own refusals.
		{"", ErrNoKey, KindNoKey, "", 0},
		{"", &RateLimitedError{RetryAfter: 1500 * time.Millisecond, detail: "slow down"}, KindRateLimited, "slow down", 2},
		{"", &PlanError{Plan: "free", Feature: "the v2 API", Upgrade: []string{"pro"}}, KindPlan, "plan free does not include the v2 API; upgrade to pro", 0},
		{"", refuse(ErrInvalid, "bad %s", "cursor"), KindInvalid, "bad cursor", 0},
		{"", &InvalidError{Field: "query", Reason: "is required"}, KindInvalid, "query: is required", 0},
		{"", refuse(ErrUnauthorized, "invalid API key"), KindUnauthorized, "invalid API key", 0},
		{"", refuse(ErrForbidden, "admin only"), KindForbidden, "admin only", 0},
		{"", refuse(ErrNotFound, "artifact not found"), KindNotFound, "artifact not found", 0},
		{"", refuse(ErrConflict, "taken"), KindConflict, "taken", 0},
		{"", wrap(refuse(ErrInvalid, "bad %s", "cursor")), KindInvalid, "bad cursor", 0},
		{"", wrap(invalid(errors.New("limit: not an integer"))), KindInvalid, "limit: not an integer", 0},
		{"", &NotServedError{Shard: 3}, KindNotServed, "", 0},
		{"", wrap(conflict), KindConflict, conflict.Error(), 0},
		// The engine's and control's, passed through (wrapped or not).
		{"engine.InvalidError", wrap(&engine.InvalidError{Field: "f", Reason: "is bad"}), KindInvalid, "f: is bad", 0},
		{"control.InvalidError", wrap(&control.InvalidError{Field: "email", Reason: "is required"}), KindInvalid, "email: is required", 0},
		{"engine.ErrNotFound", wrap(engine.ErrNotFound), KindNotFound, "not found", 0},
		{"control.ErrNotFound", wrap(control.ErrNotFound), KindNotFound, "not found", 0},
		{"control.ErrWorkspaceQuota", control.ErrWorkspaceQuota, KindForbidden, "the plan's workspace limit is reached", 0},
		{"control.WorkspaceQuotaError", wrap(&control.WorkspaceQuotaError{Plan: "free", Limit: 1}), KindForbidden,
			"plan free allows 1 workspace and the tenant owns 1: erase one of its workspaces or change the plan", 0},
		{"control.ErrJobBacklog", control.ErrJobBacklog, KindJobBacklog, control.ErrJobBacklog.Error(), 0},
		{"engine.ErrBackpressure", engine.ErrBackpressure, KindBackpressure, backpressureDetail, 0},
		{"engine.BackpressureError", wrap(backpressure), KindBackpressure, backpressure.Error(), 0},
		{"engine.ErrClosed", wrap(engine.ErrClosed), KindShuttingDown, "", 0},
		{"engine.ErrUnavailable", wrap(engine.ErrUnavailable), KindUnavailable, engine.ErrUnavailable.Error(), 0},
		{"engine.ErrNotReplicating", engine.ErrNotReplicating, KindUnavailable, engine.ErrUnavailable.Error(), 0},
		{"", context.Canceled, KindCanceled, "", 0},
		{"", wrap(context.DeadlineExceeded), KindTimeout, "", 0},
		{"", &os.PathError{Op: "write", Path: "wal/1", Err: syscall.ENOSPC}, KindDiskFull, "", 0},
		{"", wrap(syscall.EDQUOT), KindDiskFull, "", 0},
		// Internal: failures, and errors the service words itself where
		// they can reach a caller.
		{"engine.ErrDuplicate", engine.ErrDuplicate, KindInternal, "", 0},
		{"engine.ErrNoControl", engine.ErrNoControl, KindInternal, "", 0},
		{"engine.ErrWorkspaceErased", engine.ErrWorkspaceErased, KindInternal, "", 0},
		{"engine.IdempotencyConflictError", &engine.IdempotencyConflictError{Key: "k"}, KindInternal, "", 0}, // keyError
		{"engine.IdempotencyRepeatError", &engine.IdempotencyRepeatError{Item: 1, Key: "k"}, KindInternal, "", 0},
		{"control.DecodeError", &control.DecodeError{What: "snapshot", Reason: "bad"}, KindInternal, "", 0},
		{"control.ErrBuiltinTenant", control.ErrBuiltinTenant, KindInternal, "", 0},
		{"control.ErrDuplicateEmail", control.ErrDuplicateEmail, KindInternal, "", 0},
		{"control.ErrJobFinished", control.ErrJobFinished, KindInternal, "", 0},
		{"control.ErrLastKey", control.ErrLastKey, KindInternal, "", 0},
		{"control.ErrNotAttached", control.ErrNotAttached, KindInternal, "", 0},
		{"", errors.New("disk on fire"), KindInternal, "", 0},
	}
}

// TestClassify checks the kind, detail and retry advice of each error.
func TestClassify(t *testing.T) {
	for _, tc := range classifyCases() {
		got := Classify(tc.err)
		if want := (Fault{Kind: tc.kind, Detail: tc.detail, RetryAfter: tc.retry}); got != want {
			t.Errorf("Classify(%v) (%s) = %+v, want %+v", tc.err, tc.name, got, want)
		}
	}
	if got := Classify(fromControl(&control.InvalidError{Field: "plan", Reason: "unknown"})); got.Kind != KindInvalid || got.Detail != "plan: unknown" {
		t.Errorf("control's invalid error made the service's: %+v", got)
	}
}

// TestClassifyCoversEngineAndControl fails when the engine or control has
// an exported error (an Err variable or an Error type) that
// classifyCases does not list, so that a new one gets a kind on purpose.
func TestClassifyCoversEngineAndControl(t *testing.T) {
	listed := map[string]bool{}
	for _, tc := range classifyCases() {
		listed[tc.name] = true
	}
	for _, pkg := range []string{"engine", "control"} {
		for _, name := range exportedErrors(t, filepath.Join("..", pkg)) {
			if !listed[pkg+"."+name] {
				t.Errorf("%s.%s has no kind in classifyCases: add it (KindInternal if the service words it itself)", pkg, name)
			}
		}
	}
}

// TestDetailsForCallers fails when a detail the service gives a caller
// carries a package prefix ("control: ", "engine: ", "json: ") or the
// context a layer wraps an error in: each case, bare and wrapped the way
// the layers wrap theirs for their logs, gives the same detail, and no
// detail starts a clause with the name of one of the module's packages or
// encoding/json.
func TestDetailsForCallers(t *testing.T) {
	prefixes := []string{"json: ", "http: ", "fasthttp: "}
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			prefixes = append(prefixes, d.Name()+": ")
		}
	}
	cases := classifyCases()
	// Decoding errors reach callers as invalid: their details too.
	for _, body := range []string{`{"a":`, `[1]`, `{"limit":"x"}`, `{"nope":1}`, `{} 1`, `{"limit":1e999}`} {
		var v struct {
			Limit int `json:"limit"`
		}
		if err := DecodeJSON([]byte(body), "", &v); err != nil {
			cases = append(cases, classifyCase{err: invalid(err)})
		} else {
			t.Errorf("DecodeJSON(%s) accepted", body)
		}
	}
	for _, tc := range cases {
		f := Classify(tc.err)
		for _, wrapped := range []error{fmt.Errorf("service: ingest: %w", tc.err), fmt.Errorf("engine: ingest item 3: %w", tc.err)} {
			if g := Classify(wrapped); g != f {
				t.Errorf("%v (%s): wrapped, Classify = %+v, bare %+v", tc.err, tc.name, g, f)
			}
		}
		for _, p := range prefixes {
			if strings.HasPrefix(f.Detail, p) || strings.Contains(f.Detail, " "+p) {
				t.Errorf("%v (%s): detail %q carries the prefix %q", tc.err, tc.name, f.Detail, p)
			}
		}
	}
}

// TestKinds: every kind has a name.
func TestKinds(t *testing.T) {
	for _, k := range Kinds() {
		if strings.HasPrefix(k.String(), "Kind(") {
			t.Errorf("kind %d has no name", k)
		}
	}
}

// exportedErrors lists the package-level exported Err variables and Error
// types of the non-test Go files in dir.
func exportedErrors(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch sp := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range sp.Names {
						if n.IsExported() && strings.HasPrefix(n.Name, "Err") {
							names = append(names, n.Name)
						}
					}
				case *ast.TypeSpec:
					if sp.Name.IsExported() && strings.HasSuffix(sp.Name.Name, "Error") {
						names = append(names, sp.Name.Name)
					}
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("no exported errors found in %s", dir)
	}
	return names
}
