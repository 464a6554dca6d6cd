"""Locate-and-Label's prediction with its filter's first layer taken by parts (as shipped)
against the whole filter head on concatenated span vectors (as before), on the same trained
pipeline and sentences, in one process, interleaved, best of N: does the change pay?

    python bench/filter_by_parts.py --dev ../shared/data/genia/dev.jsonl \\
        --pipelines locate_label=PATH --set locate_label:KEY=JSON --threads 2 \\
        --out bench/results/speed_cpu_minilm/filter_by_parts_cpu_minilm
"""

import argparse

import spacy
import torch
from benchlib.configs import load_overrides
from benchlib.data import read_texts
from benchlib.outputs import write_table
from benchlib.pipelines import add_pipeline_arguments, predictions, same_predictions
from benchlib.speed import interleaved

from spacy_nested_mrc.models.locate_label.torch_module import LocateLabelHeads

BY_PARTS = LocateLabelHeads._filter_by_parts


def whole_head(self, table, doc, start, end):
    """The filter as before: the whole head on the [P, 3H] span vectors."""
    return self._head(self.filter, table, doc, start, end, False).squeeze(-1)


VARIANTS = {"filter by parts (shipped)": BY_PARTS, "whole filter head (before)": whole_head}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_pipeline_arguments(parser)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = read_texts(args.dev, args.sentences)
    name, path = args.pipelines[0].split("=", 1)
    nlp = spacy.load(path, config=load_overrides(args.set, name))

    def run(variant: str):
        LocateLabelHeads._filter_by_parts = VARIANTS[variant]
        return predictions(nlp, texts, args.batch_size)

    check = same_predictions(*(run(variant) for variant in VARIANTS))  # and the warm-up
    seconds = interleaved({variant: lambda variant=variant: run(variant) for variant in VARIANTS},
                          args.repeats, warm_up=False)
    LocateLabelHeads._filter_by_parts = BY_PARTS
    base = min(seconds["whole filter head (before)"])
    rows = [{"variant": v, "sentences_per_s": len(texts) / min(t), "x_before": base / min(t),
             "seconds": t} for v, t in seconds.items()]
    lines = [
        f"# Locate-and-Label's filter by parts against the whole head: {len(texts)} GENIA dev "
        f"sentences, batches of {args.batch_size}, {args.threads} threads, best of "
        f"{args.repeats}, interleaved",
        "",
        "| variant | sentences/s | x before |",
        "|---|---|---|",
        *[f"| {r['variant']} | {r['sentences_per_s']:.1f} | {r['x_before']:.3f} |" for r in rows],
        "",
        f"Same spans: {check['same_spans']}; largest score difference "
        f"{check['max_score_difference']:.2e}.",
    ]
    write_table(args.out, [*rows, {"check": check}], lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
