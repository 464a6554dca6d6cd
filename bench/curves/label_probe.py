"""Does a trained pipeline find a label at all? Its spans of one label on the dev sentences that
have one, with the boundary thresholds lowered to GATE and no score cut, so that only a model
that never learned the label finds none (#52: RNA lost by some learning-curve rows).

    python bench/curves/label_probe.py bench/work_curve/index_25/model-best \
        --dev ../shared/data/genia/dev.jsonl --label RNA --gate 0.05

Prints one JSON line: the sentences and gold spans of the label, the spans predicted with it,
how many match a gold span exactly, and the highest score among them.
"""
import argparse
import json

import spacy
import torch
from spacy.util import dot_to_dict

from spacy_nested_mrc.corpora.jsonl import read_jsonl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pipeline")
    parser.add_argument("--dev", required=True)
    parser.add_argument("--label", required=True)
    parser.add_argument("--gate", type=float, default=0.05)
    parser.add_argument("--key", default="nested")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pipe = "components.nested_mrc_ner"
    nlp = spacy.load(args.pipeline, config=dot_to_dict({
        f"{pipe}.model.decoder.start_threshold": args.gate,
        f"{pipe}.model.decoder.end_threshold": args.gate,
        f"{pipe}.threshold": 0.0, f"{pipe}.calibration": None}))
    gold = [doc for doc in read_jsonl(args.dev, nlp.vocab, args.key)
            if any(span.label_ == args.label for span in doc.spans[args.key])]
    predicted = nlp.pipe([doc.text for doc in gold], batch_size=64)
    n_gold = n_found = n_correct = 0
    best = None
    for reference, doc in zip(gold, predicted):
        wanted = {(s.start_char, s.end_char) for s in reference.spans[args.key]
                  if s.label_ == args.label}
        group = doc.spans[args.key]
        found = [((s.start_char, s.end_char), float(score))
                 for s, score in zip(group, group.attrs["scores"]) if s.label_ == args.label]
        n_gold += len(wanted)
        n_found += len(found)
        n_correct += sum(chars in wanted for chars, _ in found)
        best = max([best or 0.0, *(score for _, score in found)]) if found else best
    print(json.dumps({"pipeline": args.pipeline, "label": args.label, "gate": args.gate,
                      "sentences": len(gold), "gold": n_gold, "predicted": n_found,
                      "correct": n_correct, "highest_score": best}))


if __name__ == "__main__":
    main()
