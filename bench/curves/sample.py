"""Seeded subsets of a GENIA-style JSON Lines train file, whole documents at a time, for the
learning curves of #52: the documents ("doc" field) are shuffled once with the seed and taken
in that order until the subset holds the fraction of the sentences, so every smaller subset
lies inside every larger one.

    python bench/curves/sample.py ../shared/data/genia/train.jsonl OUT_DIR \
        --fractions 0.01,0.05,0.1,0.25 --seed 0

Writes OUT_DIR/train_<percent>.jsonl and OUT_DIR/subsets.json (sentences, documents and
mentions per subset).
"""
import argparse
import json
import random
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--fractions", default="0.01,0.05,0.1,0.25")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--doc-field", default="doc")
    args = parser.parse_args()
    documents: dict = {}
    for line in args.train.read_text(encoding="utf8").splitlines():
        if line.strip():
            record = json.loads(line)
            documents.setdefault(record.get(args.doc_field), []).append(line)
    order = sorted(documents, key=str)
    random.Random(args.seed).shuffle(order)
    total = sum(len(lines) for lines in documents.values())
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"train": str(args.train), "seed": args.seed, "subsets": {}}
    for fraction in (float(f) for f in args.fractions.split(",")):
        chosen, n = [], 0
        for key in order:
            if n >= fraction * total:
                break
            chosen.append(key)
            n += len(documents[key])
        lines = [line for key in chosen for line in documents[key]]
        name = f"train_{fraction * 100:g}.jsonl"
        (args.out / name).write_text("\n".join(lines) + "\n", encoding="utf8")
        mentions = sum(len(json.loads(line).get("entities") or []) for line in lines)
        report["subsets"][name] = {"fraction": fraction, "sentences": len(lines),
                                   "documents": len(chosen), "mentions": mentions}
    (args.out / "subsets.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
