#!/usr/bin/env python3
"""Artifact lines for `loci embed` and `loci import --vectors` benchmarks
(docs/benchmarks.md § Bulk import with vectors), from the shared data sets.

    python3 bench/bulkimport/artifacts.py locomo  --data ../shared/data --n 100000 --out locomo-100k.jsonl
    python3 bench/bulkimport/artifacts.py scifact --data ../shared/data --out scifact.jsonl
    python3 bench/bulkimport/artifacts.py sentences --data ../shared/data --n 1000000 --out s1m.jsonl

locomo: LoCoMo's 3,435 turns, repeated in rounds (round r gives every session a
new id and shifts its date by r days) until n artifacts: chat_turn payloads
{"role": "user"|"assistant", "content": "<speaker>: <text>"}, actor_id the
speaker, timestamp the session's date-time. scifact: the 5,183 abstracts as
documents ({"title", "content"}), several spans each. sentences: n distinct
texts for a large workspace of short spans (the 1M-span figures of issue 25):
every sentence of 20-600 bytes in LongMemEval's turns, SciFact's abstracts,
HotpotQA's paragraphs, τ-bench's messages and LoCoMo's turns, then every clause
of them (cut after , ; or :) of 20-600 bytes, then every run of two adjacent
sentences, then of three, each text once (short texts first: the encoder's
cost grows with the length), as chat_turn payloads {"role": "user",
"content": text}, one session per source text. Ids are random v4 UUIDs
from a fixed seed, so the same flags give the same file. The lines are what a
user writes (docs/format/export.md § Span vectors): no content_hash, no
span_ids; `loci embed` fills them in. Nothing is written into the repository.
"""
import argparse
import datetime
import json
import random
import re
import uuid

INGESTED = int(datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc).timestamp()) * 1_000_000


def locomo(data, n, rng):
    convs = json.load(open(f"{data}/locomo/locomo-dev.json"))
    r = 0
    while True:
        for ci, c in enumerate(convs):
            cv = c["conversation"]
            s = 1
            while f"session_{s}" in cv:
                when = datetime.datetime.strptime(cv[f"session_{s}_date_time"], "%I:%M %p on %d %B, %Y")
                when = when.replace(tzinfo=datetime.timezone.utc) + datetime.timedelta(days=r)
                for k, t in enumerate(cv[f"session_{s}"]):
                    role = "user" if t["speaker"] == cv["speaker_a"] else "assistant"
                    payload = json.dumps({"role": role, "content": f'{t["speaker"]}: {t["text"]}'}, ensure_ascii=False)
                    yield {"artifact_type": "chat_turn", "actor_id": t["speaker"], "session_id": f"r{r}-c{ci}-s{s}",
                           "timestamp_us": int(when.timestamp()) * 1_000_000 + k, "payload": payload}
                    n -= 1
                    if n == 0:
                        return
                s += 1
        r += 1


def scifact(data, n, rng):
    base = int(datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc).timestamp()) * 1_000_000
    for i, line in enumerate(open(f"{data}/scifact/corpus.jsonl")):
        if i == n:
            return
        d = json.loads(line)
        payload = json.dumps({"title": d["title"], "content": d["text"]}, ensure_ascii=False)
        yield {"artifact_type": "document", "actor_id": "scifact", "timestamp_us": base + i * 1_000_000, "payload": payload}


SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
CLAUSE_END = re.compile(r"(?<=[,;:])\s+")


def source_texts(data):
    """The shared data sets' texts, in a fixed order."""
    seen = set()
    for q in json.load(open(f"{data}/longmemeval/longmemeval-s-dev.json")):
        for sess in q["haystack_sessions"]:
            for t in sess:
                if t["content"] not in seen:
                    seen.add(t["content"])
                    yield t["content"]
    for line in open(f"{data}/scifact/corpus.jsonl"):
        yield json.loads(line)["text"]
    for sents in json.load(open(f"{data}/hotpotqa/hotpotqa_train_corpus.json")).values():
        yield "".join(sents)
    for ep in json.load(open(f"{data}/tau-bench/gpt-4o-airline.json")):
        for m in ep["traj"]:
            if isinstance(m.get("content"), str):
                yield m["content"]
    for c in json.load(open(f"{data}/locomo/locomo-dev.json")):
        cv = c["conversation"]
        s = 1
        while f"session_{s}" in cv:
            for t in cv[f"session_{s}"]:
                yield t["text"]
            s += 1


def sentences(data, n, rng):
    texts = []
    for t in source_texts(data):
        ss = [x.strip() for line in t.split("\n") for x in SENTENCE_END.split(line)]
        texts.append([x for x in ss if 20 <= len(x.encode()) <= 600])
    seen = set()
    base = int(datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc).timestamp()) * 1_000_000
    k = 0
    for w in (1, 0, 2, 3):  # 0: the clauses of each sentence
        for ti, ss in enumerate(texts):
            runs = [c.strip() for x in ss for c in CLAUSE_END.split(x)] if w == 0 else \
                [" ".join(ss[i:i + w]) for i in range(len(ss) - w + 1)]
            for text in runs:
                if w == 0 and not 20 <= len(text.encode()) <= 600:
                    continue
                if text in seen:
                    continue
                seen.add(text)
                payload = json.dumps({"role": "user", "content": text}, ensure_ascii=False)
                yield {"artifact_type": "chat_turn", "actor_id": "user", "session_id": f"t{ti}",
                       "timestamp_us": base + k, "payload": payload}
                k += 1
                if k == n:
                    return
    raise SystemExit(f"only {k} distinct texts; asked for {n}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", choices=["locomo", "scifact", "sentences"])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--workspace", default="bulk")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(1)
    count = 0
    with open(a.out, "x", encoding="utf-8") as f:
        f.write(json.dumps({"kind": "header", "format": "loci-export", "version": 1, "tenant": "default",
                            "workspace": a.workspace, "data_version": 1}) + "\n")
        for art in {"locomo": locomo, "scifact": scifact, "sentences": sentences}[a.corpus](a.data, a.n, rng):
            line = {"kind": "artifact", "artifact_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    "artifact_type": art["artifact_type"], "actor_id": art["actor_id"]}
            if "session_id" in art:
                line["session_id"] = art["session_id"]
            line.update({"timestamp_us": art["timestamp_us"], "ingested_at_us": INGESTED, "raw_payload_json": art["payload"]})
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            count += 1
        f.write(json.dumps({"kind": "end", "artifacts": count, "feedback": 0}) + "\n")


if __name__ == "__main__":
    main()
