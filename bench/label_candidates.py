"""Which labels a trained MRC-family pipeline can propose at all: the pipeline loaded with its
start/end thresholds (the gates) set very low and every score written, then, per label on the
first dev sentences, the spans it scores and how many of them are gold entities.
A label with no span here has start/end heads that never fire.

    python bench/label_candidates.py bench/work_full/mrc_packed_index/model-last \
        ../shared/data/genia/dev.jsonl --gate 0.05 --limit 600 \
        --out bench/results/accuracy_genia_cpu_minilm/label_candidates_mrc_packed_index.json
"""
import argparse
import json
from collections import defaultdict
from pathlib import Path

import spacy
from benchlib.configs import model_paths
from spacy.util import dot_to_dict

from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pipeline")
    parser.add_argument("dev")
    parser.add_argument("--gate", type=float, default=0.05)
    parser.add_argument("--limit", type=int, default=600)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    pipe = "components.nested_mrc_ner"
    config = spacy.util.load_config(Path(args.pipeline) / "config.cfg", interpolate=False)
    gates = model_paths(config, {"decoder.start_threshold": args.gate,
                                 "decoder.end_threshold": args.gate})
    nlp = spacy.load(args.pipeline, config=dot_to_dict({
        **gates, f"{pipe}.threshold": 0.0, f"{pipe}.one_label_per_span": False}))
    labels = nlp.get_pipe("nested_mrc_ner").labels
    examples = list(create_jsonl_reader(Path(args.dev), limit=args.limit)(nlp))
    found = defaultdict(lambda: {"scored": 0, "gold_found": 0})
    gold_count = defaultdict(int)
    for eg, doc in zip(examples, nlp.pipe(eg.predicted for eg in examples)):
        gold = {(s.start_char, s.end_char, s.label_) for s in eg.reference.spans["nested"]}
        for _, _, label in gold:
            gold_count[label] += 1
        group = doc.spans["nested"]
        for span in group:
            row = found[span.label_]
            row["scored"] += 1
            row["gold_found"] += (span.start_char, span.end_char, span.label_) in gold
    result = {"pipeline": args.pipeline, "gate": args.gate, "sentences": len(examples),
              "labels": {label: {"gold": gold_count[label], "scored": found[label]["scored"],
                                 "gold_found": found[label]["gold_found"]} for label in labels}}
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
