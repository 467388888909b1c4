"""The peers' side of the comparison harness (bench/peers): tantivy, pgvector
and the durable-ingest peers (PostgreSQL, SQLite), driven one request at a
time by the Go driver (main.go) over stdin/stdout, one JSON object a line.

Every timing is taken here, around the peer's own call only, so the pipe to
the driver costs neither side anything:
  - tantivy: in-process, around searcher.search (query parsing is timed
    apart and reported too);
  - pgvector: around cursor.execute + fetchall on a loopback connection, so
    it includes the client round trip (EXPLAIN ANALYZE gives the server's
    execution time alone);
  - ingest: wall time of the whole load, as Loci's is measured.

Run it with the venv that bench/peers/setup.sh makes (tantivy, psycopg).
"""

import json
import os
import sqlite3
import sys
import threading
import time

import numpy as np

state = {}


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


# --- tantivy ---------------------------------------------------------------


def tantivy_index(req):
    """Indexes the JSONL file of {"id": int, "text": str} in RAM."""
    import tantivy

    # Lucene's English analysis as Loci's invindex does it, as near as
    # tantivy's filters allow: simple tokenizer, lowercase, Lucene's 33
    # English stop words (tantivy's "english" list), English stemmer
    # (Snowball's, where Loci has Porter's).
    analyzer = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("id", stored=True, fast=True)
    sb.add_text_field("text", stored=False, tokenizer_name="loci_en")
    schema = sb.build()
    index = tantivy.Index(schema)  # in RAM
    index.register_tokenizer("loci_en", analyzer)
    t0 = time.perf_counter()
    writer = index.writer(heap_size=req.get("heap", 512 << 20), num_threads=req.get("threads", 2))
    n = 0
    with open(req["docs"]) as f:
        for line in f:
            d = json.loads(line)
            writer.add_document(tantivy.Document(id=d["id"], text=d["text"]))
            n += 1
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    state["tantivy"] = index
    state["searcher"] = index.searcher()
    return {"docs": n, "segments": len(state["searcher"].segment_readers()) if hasattr(state["searcher"], "segment_readers") else -1,
            "seconds": time.perf_counter() - t0}


def tantivy_query_text(q):
    # The query parser's syntax (+, -, :, quotes, AND/OR) is not the
    # question's: keep letters and digits, lowercase, one space between.
    return " ".join("".join(c if c.isalnum() else " " for c in q.lower()).split())


def tantivy_search(req):
    index, searcher = state["tantivy"], state["searcher"]
    k = req.get("k", 100)
    t0 = time.perf_counter_ns()
    query = index.parse_query(tantivy_query_text(req["q"]), ["text"])
    t1 = time.perf_counter_ns()
    res = searcher.search(query, k)
    t2 = time.perf_counter_ns()
    ids = [searcher.doc(addr)["id"][0] for _, addr in res.hits] if req.get("ids") else []
    return {"parse_ns": t1 - t0, "ns": t2 - t1, "ids": ids}


# --- pgvector --------------------------------------------------------------


def pg_connect(dsn):
    import psycopg

    return psycopg.connect(dsn, autocommit=True)


def vec_text(v):
    return "[" + ",".join("%.7g" % x for x in v) + "]"


def pg_reusable(cur, vecs):
    """Whether the table items and its HNSW index, left by an earlier run,
    hold these very vectors: the row count, the index, and rows checked at
    a few ids."""
    cur.execute("SELECT to_regclass('items') IS NOT NULL AND to_regclass('items_hnsw') IS NOT NULL")
    if not cur.fetchone()[0]:
        return False
    cur.execute("SELECT count(*) FROM items")
    if cur.fetchone()[0] != len(vecs):
        return False
    for i in sorted({0, len(vecs) // 3, len(vecs) // 2, len(vecs) - 1}):
        cur.execute("SELECT v::text FROM items WHERE id = %s", (i,))
        row = cur.fetchone()
        if row is None:
            return False
        got = np.array([float(x) for x in row[0].strip("[]").split(",")], dtype=np.float64)
        if got.shape != vecs[i].shape or np.max(np.abs(got - vecs[i])) > 1e-6:
            return False
    return True


def pg_load_vectors(req):
    """Loads n x dim float32 vectors (little endian, file req["vectors"]) as
    rows id 0..n-1 and builds the HNSW index."""
    dim = req["dim"]
    vecs = np.fromfile(req["vectors"], dtype="<f4").reshape(-1, dim)
    conn = pg_connect(req["dsn"])
    cur = conn.cursor()
    if req.get("reuse") and pg_reusable(cur, vecs):
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        ext = cur.fetchone()[0]
        cur.execute("SHOW server_version")
        ver = cur.fetchone()[0]
        conn.close()
        return {"rows": len(vecs), "copy_s": 0, "index_s": 0, "reused": True, "pgvector": ext, "postgres": ver}
    cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
    cur.execute("DROP TABLE IF EXISTS items")
    cur.execute("CREATE TABLE items (id integer PRIMARY KEY, v vector(%d))" % dim)
    t0 = time.perf_counter()
    with cur.copy("COPY items (id, v) FROM STDIN") as cp:
        for i, v in enumerate(vecs):
            cp.write_row((i, vec_text(v)))
    t1 = time.perf_counter()
    cur.execute("SET maintenance_work_mem = '%s'" % req.get("maintenance_work_mem", "2GB"))
    cur.execute("SET max_parallel_maintenance_workers = 1")
    cur.execute(
        "CREATE INDEX items_hnsw ON items USING hnsw (v vector_cosine_ops) WITH (m = %d, ef_construction = %d)"
        % (req.get("m", 16), req.get("ef_construction", 64))
    )
    t2 = time.perf_counter()
    cur.execute("VACUUM ANALYZE items")
    cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    ext = cur.fetchone()[0]
    cur.execute("SHOW server_version")
    ver = cur.fetchone()[0]
    conn.close()
    return {"rows": len(vecs), "copy_s": t1 - t0, "index_s": t2 - t1, "pgvector": ext, "postgres": ver}


def pg_open_queries(req):
    dim = req["dim"]
    qs = np.fromfile(req["queries"], dtype="<f4").reshape(-1, dim)
    state["pgq"] = [vec_text(v) for v in qs]
    conn = pg_connect(req["dsn"])
    state["pg"] = conn
    return {"queries": len(qs)}


def pg_search(req):
    conn = state["pg"]
    cur = conn.cursor()
    if state.get("ef") != req["ef"]:
        cur.execute("SET hnsw.ef_search = %d" % req["ef"])
        state["ef"] = req["ef"]
    q = state["pgq"][req["i"]]
    sql = "SELECT id FROM items ORDER BY v <=> %s::vector LIMIT %d" % ("%s", req.get("k", 100))
    if req.get("explain"):
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, (q,))
        plan = cur.fetchone()[0]
        return {"exec_ms": plan[0]["Execution Time"]}
    t0 = time.perf_counter_ns()
    cur.execute(sql, (q,), prepare=True)
    rows = cur.fetchall()
    t1 = time.perf_counter_ns()
    return {"ns": t1 - t0, "ids": [r[0] for r in rows]}


# --- durable ingest --------------------------------------------------------


def read_batches(path):
    """The JSONL file holds one batch a line: {"workspace", "artifacts": [...]}."""
    with open(path) as f:
        return [json.loads(line) for line in f]


def run_writers(batches, writers, work):
    """Runs work(batch) for every batch from writers threads; returns seconds."""
    lock = threading.Lock()
    it = iter(batches)
    errs = []

    def loop():
        try:
            w = work()
            while True:
                with lock:
                    b = next(it, None)
                if b is None:
                    return
                w(b)
        except Exception as e:  # noqa: BLE001 - reported to the driver
            errs.append(repr(e))

    ts = [threading.Thread(target=loop) for _ in range(writers)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errs:
        raise RuntimeError(errs[0])
    return time.perf_counter() - t0


def pg_ingest(req):
    """INSERTs every batch in one transaction (synchronous_commit on, fsync
    on: each COMMIT is durable when it returns), from req["writers"]
    connections."""
    batches = read_batches(req["file"])
    conn = pg_connect(req["dsn"])
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS artifacts")
    cur.execute(
        "CREATE TABLE artifacts (id bigserial PRIMARY KEY, workspace text NOT NULL, actor text NOT NULL, type text NOT NULL,"
        " payload jsonb NOT NULL, ts timestamptz NOT NULL, session text)"
    )
    if req.get("fts"):
        # A lexical index maintained at commit, as Loci's is: the payload's
        # string values, English stemming, in a GIN index.
        cur.execute("ALTER TABLE artifacts ADD COLUMN tsv tsvector"
                    " GENERATED ALWAYS AS (jsonb_to_tsvector('english', payload, '[\"string\"]')) STORED")
        cur.execute("CREATE INDEX artifacts_tsv ON artifacts USING gin (tsv)")
    cur.execute("SHOW fsync")
    fsync = cur.fetchone()[0]
    cur.execute("SHOW synchronous_commit")
    sc = cur.fetchone()[0]
    cur.execute("CHECKPOINT")
    conn.close()

    def work():
        c = pg_connect(req["dsn"])
        c.autocommit = False

        def do(b):
            with c.cursor() as k:
                k.executemany(
                    "INSERT INTO artifacts (workspace, actor, type, payload, ts, session) VALUES (%s, %s, %s, %s, %s, %s)",
                    [(b["workspace"], "bench", a["artifact_type"], json.dumps(a["raw_payload"]), a["timestamp"], a["session_id"])
                     for a in b["artifacts"]],
                )
            c.commit()

        return do

    secs = run_writers(batches, req["writers"], work)
    n = sum(len(b["artifacts"]) for b in batches)
    if req.get("fts"):  # the index holds the artifacts' words
        conn = pg_connect(req["dsn"])
        got = conn.execute("SELECT count(*) FROM artifacts WHERE tsv <> ''::tsvector").fetchone()[0]
        conn.close()
        if got == 0:
            raise RuntimeError("no artifact has a non-empty tsvector")
    return {"artifacts": n, "seconds": secs, "fsync": fsync, "synchronous_commit": sc}


def sqlite_ingest(req):
    """INSERTs every batch in one transaction into a WAL-mode database with
    synchronous=FULL (each COMMIT fsyncs the WAL), one writer: SQLite takes
    one at a time."""
    path = req["path"]
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    batches = read_batches(req["file"])
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    conn.execute("PRAGMA synchronous=FULL")
    sync = conn.execute("PRAGMA synchronous").fetchone()[0]
    conn.execute(
        "CREATE TABLE artifacts (id INTEGER PRIMARY KEY, workspace TEXT NOT NULL, actor TEXT NOT NULL, type TEXT NOT NULL,"
        " payload TEXT NOT NULL, ts TEXT NOT NULL, session TEXT)"
    )
    fts = bool(req.get("fts"))
    if fts:
        # A lexical index maintained at commit, as Loci's is: an external-content
        # FTS5 table over the payload, Porter stemming, kept by a trigger.
        conn.execute("CREATE VIRTUAL TABLE artifacts_fts USING fts5(payload, content='artifacts', content_rowid='id',"
                     " tokenize='porter unicode61')")
        conn.execute("CREATE TRIGGER artifacts_ai AFTER INSERT ON artifacts BEGIN"
                     " INSERT INTO artifacts_fts(rowid, payload) VALUES (new.id, new.payload); END")

    def work():
        def do(b):
            conn.execute("BEGIN")
            conn.executemany(
                "INSERT INTO artifacts (workspace, actor, type, payload, ts, session) VALUES (?, ?, ?, ?, ?, ?)",
                [(b["workspace"], "bench", a["artifact_type"], json.dumps(a["raw_payload"]), a["timestamp"], a["session_id"])
                 for a in b["artifacts"]],
            )
            conn.execute("COMMIT")

        return do

    secs = run_writers(batches, 1, work)
    conn.close()
    n = sum(len(b["artifacts"]) for b in batches)
    if fts:  # the index holds every artifact
        conn2 = sqlite3.connect(path)
        got = conn2.execute("SELECT count(*) FROM artifacts_fts WHERE artifacts_fts MATCH 'the OR a OR to'").fetchone()[0]
        conn2.close()
        if got == 0:
            raise RuntimeError("the FTS5 index matched nothing")
    return {"artifacts": n, "seconds": secs, "journal_mode": mode, "synchronous": sync, "sqlite": sqlite3.sqlite_version}


OPS = {
    "tantivy_index": tantivy_index,
    "tantivy_search": tantivy_search,
    "pg_load_vectors": pg_load_vectors,
    "pg_open_queries": pg_open_queries,
    "pg_search": pg_search,
    "pg_ingest": pg_ingest,
    "sqlite_ingest": sqlite_ingest,
}


def main():
    for line in sys.stdin:
        req = json.loads(line)
        try:
            reply(OPS[req["op"]](req))
        except Exception as e:  # noqa: BLE001 - the driver prints it and stops
            reply({"error": "%s: %r" % (req["op"], e)})


if __name__ == "__main__":
    main()
