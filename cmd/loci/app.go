package main

import (
	"errors"
	"log/slog"
	"time"

	"github.com/loci-memory/loci/control"
	"github.com/loci-memory/loci/engine"
	"github.com/loci-memory/loci/service"
)

// The application's wiring: what opens the data directory and builds the
// service over it, for every command (the transports take a built service).

// openEngine opens the engine at dir with ctl as its control state
// (opts.Control, which a directory holding control records needs to open),
// then attaches ctl to it so that control writes go to its WAL. A nil ctl
// is a fresh control.Store.
func openEngine(dir string, opts engine.Options, ctl *control.Store) (*engine.DB, *control.Store, error) {
	if ctl == nil {
		ctl = control.New(time.Now)
	}
	opts.Control = ctl
	db, err := engine.Open(dir, opts)
	if err != nil {
		return nil, nil, err
	}
	ctl.Attach(db.AppendControl)
	return db, ctl, nil
}

// app is one node's application: the engine over the data directory, its
// control state, and the service over both, which a transport serves.
type app struct {
	db  *engine.DB
	svc *service.Service
}

// openApp opens the engine at dir (openEngine) and builds the service over
// it with cfg. The service's background work starts when its transport
// starts it (httpd.Server.Start, or the caller).
func openApp(dir string, opts engine.Options, ctl *control.Store, cfg service.Config) (*app, error) {
	db, ctl, err := openEngine(dir, opts, ctl)
	if err != nil {
		return nil, err
	}
	return &app{db: db, svc: service.New(db, ctl, cfg)}, nil
}

// stop closes the engine at a clean stop, once nothing serves the service
// any more (its background work stopped: httpd.Server.Shutdown). The head
// is written as a segment first, so the next start replays no WAL; that
// flush is skipped while artifacts wait for the embedder, and a full disk
// fails neither: everything acknowledged is already durable in the WAL.
func (a *app) stop(log *slog.Logger) error {
	var flushErr error
	if n := a.db.EmbeddingBacklog(); n > 0 {
		// A flush would wait for the embedder (a segment is written with its
		// vectors); the WAL holds everything, and the next start embeds them.
		log.Info("loci: final flush skipped: artifacts wait for the embedder; the next start replays them from the WAL and embeds them", "artifacts", n)
	} else {
		flushErr = a.db.Flush() // the next start replays no WAL
	}
	if diskFull(flushErr) {
		// Everything acknowledged is already durable in the WAL, which the
		// next start replays: a full disk must not make a clean stop fail.
		log.Warn("loci: final flush skipped: no space left on device; the next start replays the WAL", "err", flushErr)
		flushErr = nil
	}
	closeErr := a.db.Close()
	if diskFull(closeErr) {
		log.Warn("loci: closing the engine hit a full disk; acknowledged writes were already durable", "err", closeErr)
		closeErr = nil
	}
	return errors.Join(flushErr, closeErr)
}
