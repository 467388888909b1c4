#!/usr/bin/env python3
"""samecheck: record what a loci binary answers and writes for a fixed workload,
so that two builds (before and after a restructuring) can be compared.

  samecheck.py make-export --bin LOCI --out export.jsonl   # once, with the old build
  samecheck.py run --bin LOCI --export export.jsonl --out DIR
  samecheck.py diff DIR_A DIR_B

`run` imports the export into a fresh data directory (`loci import`, which keeps
ids and timestamps), records the SHA-256 of every file it wrote, serves it, and
records the raw answers of v1 and v2 context packs (LoCoMo questions and conflict
probes), their receipts, feedback (pin, mark_wrong, outdated, resolve_conflict),
an artifact erasure, the packs and receipts after each, the same after a
restart, `loci verify`, and a second export. Nothing is normalised: `diff` lists
every byte that differs, and two runs of one build show what the wall clock
changes (feedback and receipt times). Standard library only.
"""
import argparse, re, hashlib, json, os, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request
from datetime import datetime, timezone

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../shared/data/locomo/locomo-dev.json")
WS = "samecheck"
CONFLICT_NOTES = [
    "The staging deploy password is alpha-7.",
    "The staging deploy password is bravo-9.",
    "Dana's office is on the third floor.",
    "Dana's office is on the fifth floor.",
]
CONFLICT_QUERIES = ["What is the staging deploy password?", "Which floor is Dana's office on?"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Server:
    def __init__(self, binary, data, log):
        self.port = free_port()
        self.log = open(log, "ab")
        env = dict(os.environ, API_KEY="", LOCI_EMBEDDER="glove")
        self.p = subprocess.Popen([binary, "serve", "--addr", f"127.0.0.1:{self.port}", "--data", data,
                                   "--embedder", "glove", "--fsync", "off"], stdout=self.log, stderr=self.log, env=env)
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1).read()
                return
            except Exception:
                if self.p.poll() is not None:
                    sys.exit(f"loci serve exited with {self.p.returncode}; see {log}")
                time.sleep(0.1)
        sys.exit("loci serve did not become healthy")

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(60)
        self.log.close()


def locomo(n_convs):
    convs = json.load(open(DATA))[:n_convs]
    out = []
    for c in convs:
        conv, turns = c["conversation"], []
        k = 1
        while f"session_{k}" in conv:
            when = datetime.strptime(conv[f"session_{k}_date_time"], "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
            for i, t in enumerate(conv[f"session_{k}"]):
                turns.append({"speaker": t["speaker"], "text": t["text"], "dia": t["dia_id"], "session": f"s{k}",
                              "ts": (when.timestamp() + 30 * i)})
            k += 1
        out.append((turns, [q["question"] for q in c["qa"]]))
    return out


def make_export(a):
    tmp = tempfile.mkdtemp(prefix="samecheck-")
    srv = Server(a.bin, os.path.join(tmp, "data"), os.path.join(tmp, "serve.log"))
    try:
        turns, _ = locomo(1)[0]
        for i in range(0, len(turns), 64):
            items = [{"artifact_type": "chat_turn", "raw_payload": {"role": t["speaker"], "content": t["text"]},
                      "idempotency_key": t["dia"], "session_id": t["session"],
                      "timestamp": datetime.fromtimestamp(t["ts"], timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                      "metadata": {"dia": t["dia"]}} for t in turns[i:i + 64]]
            st, body = srv.call("POST", "/v2/ingest", {"workspace_id": WS, "actor_id": "samecheck", "artifacts": items,
                                                        "wait_for_embedding": True})
            assert st == 201, (st, body)
        notes = [{"artifact_type": "note", "raw_payload": {"text": n}, "idempotency_key": f"note-{i}",
                  "timestamp": f"2024-01-0{i + 1}T09:00:00Z"} for i, n in enumerate(CONFLICT_NOTES)]
        st, body = srv.call("POST", "/v2/ingest", {"workspace_id": WS, "actor_id": "samecheck", "artifacts": notes,
                                                    "wait_for_embedding": True})
        assert st == 201, (st, body)
    finally:
        srv.stop()
    r = subprocess.run([a.bin, "export", "--data", os.path.join(tmp, "data"), "--workspace", WS, "--out", a.out], capture_output=True)
    if r.returncode:
        sys.exit(r.stderr.decode())
    shutil.rmtree(tmp)
    print(f"wrote {a.out}")


def file_hashes(root):
    lines = []
    for d, _, fs in sorted(os.walk(root)):
        for f in sorted(fs):
            p = os.path.join(d, f)
            if f == "LOCK":
                continue
            lines.append(f"{hashlib.sha256(open(p, 'rb').read()).hexdigest()}  {os.path.relpath(p, root)}")
    return "\n".join(lines) + "\n"


def run(a):
    os.makedirs(a.out, exist_ok=True)
    data = os.path.join(a.out, "data")
    shutil.rmtree(data, ignore_errors=True)
    rec = open(os.path.join(a.out, "answers.jsonl"), "w")

    def note(kind, st, body):
        text = body.decode("utf-8", "replace").replace(os.path.abspath(a.out), "OUT")
        rec.write(json.dumps({"step": kind, "status": st, "body": text}) + "\n")

    r = subprocess.run([a.bin, "import", "--data", data, "--in", a.export, "--embedder", "glove"], capture_output=True)
    note("import", r.returncode, r.stdout)
    open(os.path.join(a.out, "files-after-import.txt"), "w").write(file_hashes(data))
    _, questions = locomo(1)[0]
    queries = questions[: a.questions] + CONFLICT_QUERIES
    log = os.path.join(a.out, "serve.log")
    if os.path.exists(log):
        os.remove(log)

    def packs(srv, tag):
        ids, cited, conflicts = [], [], []
        for q in queries:
            for path, extra in (("/v1/context-pack", {"max_tokens": 1024}),
                                ("/v2/context-pack", {"max_tokens": 2048, "profile": "balanced"}),
                                ("/v2/context-pack", {"max_tokens": 512, "profile": "high_recall"})):
                st, body = srv.call("POST", path, dict({"workspace_id": WS, "query": q}, **extra))
                note(f"{tag} {path} {extra}", st, body)
                if st == 200:
                    j = json.loads(body)
                    ids.append(j["receipt_id"])
                    cited += [(c["artifact_id"], c["span_id"]) for c in j.get("citations", []) if c.get("span_id")]
                    conflicts += [(c["id"], c["claim_a"]["span_id"]) for c in j.get("conflicts", []) or []]
        for rid in ids:
            st, body = srv.call("GET", f"/v1/receipts/{rid}")
            note(f"{tag} receipt", st, body)
        st, body = srv.call("GET", f"/v1/receipts?workspace_id={WS}&limit=500")
        note(f"{tag} receipt list", st, body)
        return ids, cited, conflicts

    srv = Server(a.bin, data, log)
    try:
        _, cited, conflicts = packs(srv, "first")
        spans = sorted(set(cited))
        st, body = srv.call("GET", f"/v1/workspaces/{WS}/artifacts?limit=500")
        note("artifacts", st, body)
        arts = [x["artifact_id"] for x in json.loads(body)["artifacts"]]
        for action, sp in (("pin", spans[0]), ("mark_wrong", spans[1]), ("outdated", spans[2])):
            st, body = srv.call("POST", "/v1/feedback", {"workspace_id": WS, "action": action, "artifact_id": sp[0],
                                                         "span_id": sp[1]})
            note(f"feedback {action}", st, body)
        for cid, keep in sorted(set(conflicts))[:1]:
            st, body = srv.call("POST", "/v1/feedback", {"workspace_id": WS, "action": "resolve_conflict",
                                                         "conflict_id": cid, "preferred_span_id": keep})
            note("feedback resolve_conflict", st, body)
        packs(srv, "after feedback")
        erased = sorted(arts)[len(arts) // 2]
        st, body = srv.call("DELETE", f"/v1/artifacts/{erased}")
        note("erase", st, body)
        packs(srv, "after erase")
    finally:
        srv.stop()
    srv = Server(a.bin, data, log)
    try:
        packs(srv, "after restart")
    finally:
        srv.stop()
    r = subprocess.run([a.bin, "verify", "--data", data], capture_output=True)
    note("verify", r.returncode, r.stdout + r.stderr)
    exp = os.path.join(a.out, "export-after.jsonl")
    if os.path.exists(exp):
        os.remove(exp)
    r = subprocess.run([a.bin, "export", "--data", data, "--workspace", WS, "--out", exp], capture_output=True)
    note("export", r.returncode, r.stderr)
    open(os.path.join(a.out, "files-after-serve.txt"), "w").write(file_hashes(data))
    rec.close()
    shutil.rmtree(data)
    print(f"recorded {a.out}")


# Fields the wall clock or a random id sets: two runs of one build differ there.
CLOCK = re.compile(rb'(\\?"(?:timestamp|created_at|created_at_us|exported_at|feedback_id)\\?":\\?"?)[^",}\\]*')

# Fields that carry WAL sequence numbers (receipt ids cover the data version):
# background embedding writes a timing-dependent number of vectors records,
# which take sequence numbers, so after the first write of a run these differ
# between two runs of one build too.
SEQ = re.compile(rb'(\\?"(?:receipt_id|id|data_version)\\?":\\?"?)[0-9a-f-]+')


def diff(a):
    same = True
    for f in ("files-after-import.txt", "answers.jsonl", "export-after.jsonl", "files-after-serve.txt"):
        x = open(os.path.join(a.a, f), "rb").read().splitlines()
        y = open(os.path.join(a.b, f), "rb").read().splitlines()
        if not a.raw:
            x, y = [CLOCK.sub(rb"\1~", l) for l in x], [CLOCK.sub(rb"\1~", l) for l in y]
        if a.loose:
            x, y = [SEQ.sub(rb"\1~", l) for l in x], [SEQ.sub(rb"\1~", l) for l in y]
        bad = [i for i in range(max(len(x), len(y))) if i >= len(x) or i >= len(y) or x[i] != y[i]]
        print(f"{f}: {len(x)} lines, {len(bad)} differ")
        for i in bad[:a.show]:
            print(f"  line {i + 1}:\n    A {x[i][:300] if i < len(x) else b'-'}\n    B {y[i][:300] if i < len(y) else b'-'}")
        same = same and not bad
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-export"); m.add_argument("--bin", required=True); m.add_argument("--out", required=True)
    r = sub.add_parser("run"); r.add_argument("--bin", required=True); r.add_argument("--export", required=True)
    r.add_argument("--out", required=True); r.add_argument("--questions", type=int, default=60)
    d = sub.add_parser("diff"); d.add_argument("a"); d.add_argument("b"); d.add_argument("--show", type=int, default=5)
    d.add_argument("--raw", action="store_true", help="compare the wall-clock fields too")
    d.add_argument("--loose", action="store_true", help="also ignore receipt ids and data versions")
    a = ap.parse_args()
    {"make-export": make_export, "run": run, "diff": diff}[a.cmd](a)
