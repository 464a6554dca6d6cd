"""Recall of the intermediate pipeline (#52) on the biomedical corpora's dev sentences, with
the pipe writing one label per span (its default) and with every label it finds: the
corpora name one concept several ways (GENE, GGP, Protein, Gene_or_gene_product), a
prediction asks every label's question, and with one label per span a corpus's own label
loses the span to a synonym that scored higher. Each corpus is scored on its own labels
(gold tokens, the first N sentences with an entity); the labels written are counted.

    python bench/curves/synonyms.py PIPELINE --biomed ../shared/data/biomed-ner \
        --out bench/results/curves_cpu_minilm/synonyms
"""
import argparse
import gzip
import json
import sys
import warnings
from collections import Counter
from pathlib import Path

import spacy
import torch
from spacy.tokens import Doc

sys.path.insert(0, str(Path(__file__).parents[1]))  # bench/: benchlib
from benchlib.machine import machine  # noqa: E402
from benchlib.outputs import write_outputs  # noqa: E402

CORPORA = {"bc2gm": ["GENE"], "ncbi-disease": ["Disease"], "linnaeus": ["Species"],
           "bc5cdr": ["Chemical", "Disease"], "anatem": ["Anatomy"]}


def score(nlp, records, labels):
    pipe = nlp.get_pipe("nested_mrc_ner")
    docs = [Doc(nlp.vocab, words=r["tokens"]) for r in records]
    tp = fn = fp = 0
    written: Counter = Counter()
    for doc, record in zip(pipe.pipe(docs), records):
        gold = {(e["start"], e["end"], e["type"]) for e in record["entities"]}
        spans = doc.spans["nested"]
        written.update(s.label_ for s in spans)
        pred = {(s.start, s.end, s.label_) for s in spans if s.label_ in labels}
        tp, fn, fp = tp + len(gold & pred), fn + len(gold - pred), fp + len(pred - gold)
    return {"p": round(100 * tp / max(1, tp + fp), 1), "r": round(100 * tp / max(1, tp + fn), 1),
            "gold": tp + fn, "written": dict(written.most_common(6))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pipeline")
    parser.add_argument("--biomed", type=Path, required=True)
    parser.add_argument("--sentences", type=int, default=150)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    rows = []
    for one_label in (True, False):
        nlp = spacy.load(args.pipeline, config={
            "components.nested_mrc_ner.one_label_per_span": one_label})
        for corpus, labels in CORPORA.items():
            with gzip.open(args.biomed / corpus / "dev.jsonl.gz", "rt", encoding="utf8") as f:
                records = [r for r in map(json.loads, f) if r["entities"]][: args.sentences]
            rows.append({"one_label_per_span": one_label, "corpus": corpus,
                         **score(nlp, records, labels)})
    lines = ["| one_label_per_span | corpus | P | R | gold | labels written (most) |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['one_label_per_span']} | {r['corpus']} | {r['p']} | {r['r']} | {r['gold']} "
              f"| {', '.join(f'{k} {v}' for k, v in r['written'].items())} |" for r in rows]
    write_outputs(args.out, {"command": " ".join(sys.argv), "machine": machine(), "rows": rows},
                  "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
