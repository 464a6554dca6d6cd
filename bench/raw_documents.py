"""Whole documents as users pass them: each GENIA abstract as one raw text through
``nlp(text)`` (no sentence boundaries given), against the same sentences passed one by one,
spans compared by character offsets and label (micro P/R/F1).

    python bench/raw_documents.py mrc_packed=training/mrc_packed_cpu/model-best \\
        --train ../shared/data/genia/train.jsonl --dev ../shared/data/genia/dev.jsonl \\
        --out bench/results/documents_raw_cpu_minilm/raw_documents_cpu_minilm

Abstracts: the first ``--limit`` GENIA train abstracts of at least ``--min-sentences``
sentences, and every dev abstract (its dev sentences: fragments). A sentence's text is its
tokens joined by spaces, as the JSON Lines reader makes it; an abstract's text is its
sentences joined by spaces. The ways of reading:

- ``sentences``: each sentence through the pipeline alone, its spans shifted to its place;
- ``raw``: the abstract's text, as it is (the pipe finds the sentences, ``split_sentences``);
- ``raw_whole``: the same with ``split_sentences = false`` in the pipe and in the shared
  transformer's span getter (the abstract read as one text in overlapping windows: the
  behaviour before the pipe split sentences);
- ``raw_sentencizer``: spaCy's ``sentencizer`` first.
"""
import argparse
import json
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Dict, List, Sequence, Set, Tuple

import spacy
import torch

WAYS = ("sentences", "raw", "raw_whole", "raw_sentencizer")
Span = Tuple[int, int, int, str]  # abstract, start_char, end_char, label


def read_abstracts(path: str) -> List[List[Dict[str, Any]]]:
    """The records of a GENIA JSON Lines file grouped by consecutive equal "doc"."""
    groups: "OrderedDict[int, List[Dict[str, Any]]]" = OrderedDict()
    previous, index = None, -1
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("doc") != previous or index < 0:
            index += 1
            groups[index] = []
            previous = record.get("doc")
        groups[index].append(record)
    return list(groups.values())


def sentence_text(record: Dict[str, Any]) -> Tuple[str, List[int]]:
    """RETURNS: the record's text (tokens joined by spaces) and each token's start char."""
    starts, position = [], 0
    for token in record["tokens"]:
        starts.append(position)
        position += len(token) + 1
    return " ".join(record["tokens"]), starts


def gold_and_texts(abstracts: Sequence[List[Dict[str, Any]]]):
    """RETURNS: the gold spans by characters, each abstract's sentence texts and their
    offsets in the abstract's text."""
    gold: Set[Span] = set()
    sentences, offsets = [], []
    for a, records in enumerate(abstracts):
        texts, shifts, shift = [], [], 0
        for record in records:
            text, starts = sentence_text(record)
            for entity in record["entities"]:
                end_token = record["tokens"][entity["end"] - 1]
                end = starts[entity["end"] - 1] + len(end_token)
                gold.add((a, shift + starts[entity["start"]], shift + end, entity["type"]))
            texts.append(text)
            shifts.append(shift)
            shift += len(text) + 1
        sentences.append(texts)
        offsets.append(shifts)
    return gold, sentences, offsets


def predicted(docs, key: str, abstract_of: Sequence[int], shifts: Sequence[int]) -> Set[Span]:
    found: Set[Span] = set()
    for doc, a, shift in zip(docs, abstract_of, shifts):
        for span in doc.spans.get(key, []):
            found.add((a, span.start_char + shift, span.end_char + shift, span.label_))
    return found


def prf(gold: Set[Span], found: Set[Span]) -> Dict[str, float]:
    tp = len(gold & found)
    p = tp / len(found) if found else 0.0
    r = tp / len(gold) if gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"p": round(100 * p, 2), "r": round(100 * r, 2), "f": round(100 * f, 2),
            "gold": len(gold), "predicted": len(found)}


def load(path: str, way: str):
    if way == "raw_whole":  # the pipe's reading, and the shared transformer's windows
        config = spacy.util.load_config(Path(path) / "config.cfg", interpolate=False)
        overrides = {"components.nested_mrc_ner.split_sentences": False}
        for name, component in config["components"].items():
            getter = component.get("model", {}).get("get_spans", {})
            if str(getter.get("@span_getters", "")).startswith("spacy-nested-mrc."):
                overrides[f"components.{name}.model.get_spans.split_sentences"] = False
        return spacy.load(path, config=overrides)
    nlp = spacy.load(path)
    if way == "raw_sentencizer":
        nlp.add_pipe("sentencizer", first=True)
    return nlp


def read_way(path: str, way: str, abstracts, batch_size: int) -> Tuple[Dict[str, float], float]:
    gold, sentences, offsets = gold_and_texts(abstracts)
    nlp = load(path, way)
    key = nlp.get_pipe("nested_mrc_ner").key
    if way == "sentences":
        texts = [t for texts in sentences for t in texts]
        abstract_of = [a for a, texts in enumerate(sentences) for _ in texts]
        shifts = [s for shifts in offsets for s in shifts]
    else:
        texts = [" ".join(texts) for texts in sentences]
        abstract_of, shifts = list(range(len(texts))), [0] * len(texts)
    start = time.perf_counter()
    docs = list(nlp.pipe(texts, batch_size=batch_size))
    seconds = time.perf_counter() - start
    return prf(gold, predicted(docs, key, abstract_of, shifts)), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pipelines", nargs="+", help="NAME=PATH of trained pipelines")
    parser.add_argument("--train", required=True, help="GENIA train JSON Lines")
    parser.add_argument("--dev", required=True, help="GENIA dev JSON Lines")
    parser.add_argument("--min-sentences", type=int, default=6)
    parser.add_argument("--limit", type=int, default=60, help="train abstracts read")
    parser.add_argument("--sets", nargs="+", default=["train_abstracts", "dev_abstracts"])
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=WAYS)
    parser.add_argument("--batch-size", type=int, default=8, help="nlp.pipe batch size")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True, help="path prefix of the .json and .md")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    train = [a for a in read_abstracts(args.train) if len(a) >= args.min_sentences]
    sets = {"train_abstracts": train[: args.limit], "dev_abstracts": read_abstracts(args.dev)}
    rows = []
    for name, path in (p.split("=", 1) for p in args.pipelines):
        for set_name in args.sets:
            abstracts = sets[set_name]
            for way in args.ways:
                scores, seconds = read_way(path, way, abstracts, args.batch_size)
                row = {"pipeline": name, "set": set_name, "abstracts": len(abstracts),
                       "sentences": sum(len(a) for a in abstracts), "way": way,
                       **scores, "seconds": round(seconds, 1)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(
        {"command": " ".join(sys.argv), "rows": rows}, indent=1) + "\n")
    lines = [f"`{' '.join(sys.argv)}`", "",
             "| pipeline | abstracts | way | P | R | F1 | F1 - sentences | seconds |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        base = next(r["f"] for r in rows if r["pipeline"] == row["pipeline"]
                    and r["set"] == row["set"] and r["way"] == "sentences") \
            if "sentences" in args.ways else row["f"]
        lines.append(f"| {row['pipeline']} | {row['set']} ({row['abstracts']}, "
                     f"{row['sentences']} sentences) | {row['way']} | {row['p']} | {row['r']} | "
                     f"{row['f']} | {row['f'] - base:+.2f} | {row['seconds']} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
