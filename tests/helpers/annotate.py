"""``annotate`` on a small trained MRC pipeline: its texts, the pipeline saved, its training
examples as a gold file, and the records a job writes."""

import json
from pathlib import Path

from spacy.util import fix_random_seed

from helpers.pipes import TRAIN, blank_nlp, make_examples
from spacy_nested_mrc.annotate import MANIFEST

TEXTS = [text for text, _ in TRAIN if text] + [
    "IL-2 and Jurkat cells",
    "the IL-2 gene in human T cells",
]


def save_trained_pipeline(encoder: str, path: Path) -> Path:
    """An MRC pipeline trained a few steps (it writes some spans), saved to ``path``."""
    fix_random_seed(0)
    nlp = blank_nlp(encoder, model={"heads": {"match_candidates": "all",
                                                 "boundary_prior": 0.0}})
    examples = make_examples(nlp, TRAIN)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(40):
        nlp.update(examples, sgd=optimizer, drop=0.0)
    nlp.to_disk(path)
    return path


def write_gold(folder: Path) -> Path:
    """The training examples as a GENIA-style JSONL file."""
    path = folder / "gold.jsonl"
    lines = [json.dumps({"tokens": text.split(), "entities": [
        {"start": s, "end": e, "type": label} for s, e, label in spans]})
        for text, spans in TRAIN if text]
    path.write_text("\n".join(lines) + "\n")
    return path


def read_output(folder: Path) -> list:
    manifest = json.loads((folder / MANIFEST).read_text())
    records = []
    for shard in manifest["shards"]:
        with (folder / shard["name"]).open(encoding="utf8") as f:
            records += [json.loads(line) for line in f]
    return records


def as_comparable(records: list) -> list:
    return [
        (r["id"], sorted((s["start_char"], s["end_char"], s["label"]) for s in r["spans"]))
        for r in records
    ]
