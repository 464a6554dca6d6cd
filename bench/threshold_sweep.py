"""Decode-time sweep of the start/end thresholds of a trained MRC-style pipeline on the first
N dev sentences (tuning on dev; the test split is never read).

    python bench/threshold_sweep.py bench/work/mrc/model-last \
        --dev ../shared/data/genia/dev.jsonl --sentences 300 --thresholds 0.5 0.4 0.35 0.3 0.2

Prints one JSON line per threshold: P, R and F1 of doc.spans["nested"].
"""
import argparse
import json

from benchlib.pipelines import predict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pipeline")
    parser.add_argument("--dev", required=True)
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.5, 0.4, 0.3, 0.2])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    from dataclasses import replace

    import spacy
    import torch
    from spacy.training import Example

    from spacy_nested_mrc.corpora.jsonl import read_jsonl
    from spacy_nested_mrc.scoring.scorer import score_nested

    torch.set_num_threads(args.threads)
    nlp = spacy.load(args.pipeline)
    gold = list(read_jsonl(args.dev, nlp.vocab, "nested", limit=args.sentences))
    heads = nlp.get_pipe("nested_mrc_ner").model.get_ref("heads").attrs["torch_module"]
    for threshold in args.thresholds:
        heads.decoder = replace(heads.decoder, start_threshold=threshold, end_threshold=threshold)
        predicted, _ = predict(nlp, gold, batch_size=64)
        scores = score_nested([Example(p, g) for p, g in zip(predicted, gold)])
        print(json.dumps({"boundary_threshold": threshold,
                          "p": round(scores["spans_nested_p"], 3),
                          "r": round(scores["spans_nested_r"], 3),
                          "f": round(scores["spans_nested_f"], 3)}), flush=True)


if __name__ == "__main__":
    main()
