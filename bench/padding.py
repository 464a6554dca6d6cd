"""How much of a training batch's encoder input is padding, and how large its largest encoder
call is, with and without ``max_pass_tokens`` (calls by length, ``encode_by_length``): spaCy's
``batch_by_words`` batches (400 words, tolerance 0.2) of the first N GENIA train sentences,
shuffled as ``spacy train`` does, tokenized by the encoder's tokenizer. No model runs.

    python bench/padding.py --train ../shared/data/genia/train.jsonl \\
        --out bench/results/data_genia/padding_genia

Two layouts: ``mrc_packed`` (one sequence a sentence: its wordpieces, the five one-wordpiece
index questions with their separators and [CLS]/[SEP]; sentences past 256 are counted at 256)
and ``locate_label`` (the transformer's windows: a sentence of up to 64 tokens is one window,
a longer one 64-token windows every 48, as ``sentence_windows.v2`` without sentence
boundaries). "Work" is the encoder's input size, sequences x the longest of each call, summed
over a batch's calls (all of them are kept for the backward pass); "largest call" the largest
single call, "heaviest batch" the largest work of a batch (what the activations kept for the
backward pass grow with), "attention" the largest sum over a batch's calls of sequences x
longest^2 (the size of the attention maps).
"""
import argparse
import random
from typing import Dict, List

import numpy as np
from benchlib.data import read_records
from benchlib.outputs import write_table

QUESTIONS = 1 + 5 * 2  # [CLS] and five one-wordpiece questions, each with its [SEP]


def sequence_lengths(records: List[dict], tokenizer, layout: str) -> List[List[int]]:
    """Per sentence, the wordpieces of each encoder sequence it makes."""
    out = []
    for record in records:
        tokens = record["tokens"]
        if layout == "mrc_packed":
            pieces = len(tokenizer(" ".join(tokens), add_special_tokens=False)["input_ids"])
            out.append([min(256, pieces + QUESTIONS + 1)])
            continue
        windows = [tokens] if len(tokens) <= 64 else [
            tokens[s : s + 64] for s in range(0, max(1, len(tokens) - 16), 48)
        ]
        out.append([len(tokenizer(" ".join(w))["input_ids"]) for w in windows])
    return out


def calls(lengths: List[int], budget: int) -> List[List[int]]:
    """The lengths of each encoder call, as ``encode_by_length`` groups them."""
    from spacy_nested_mrc.encoder.passes import length_groups

    array = np.asarray(lengths)
    return [array[group].tolist() for group in length_groups(array, budget)]


def measure(per_sentence: List[List[int]], words: List[int], size: int, budget: int,
            seed: int) -> Dict[str, float]:
    from spacy.training.batchers import minibatch_by_words

    order = list(range(size))
    random.Random(seed).shuffle(order)
    items = [_Sized(i, words[i]) for i in order]
    work = real = 0
    largest = attention = heaviest = 0
    n_calls = n_batches = 0
    for batch in minibatch_by_words(items, 400, tolerance=0.2, discard_oversize=False):
        lengths = [length for item in batch for length in per_sentence[item.index]]
        parts = calls(lengths, budget)
        n_batches += 1
        n_calls += len(parts)
        real += sum(lengths)
        sizes = [len(p) * max(p) for p in parts]
        work += sum(sizes)
        largest = max(largest, max(sizes))
        heaviest = max(heaviest, sum(sizes))
        attention = max(attention, sum(len(p) * max(p) ** 2 for p in parts))
    return {"sentences": size, "max_pass_tokens": budget, "batches": n_batches,
            "calls_per_batch": round(n_calls / n_batches, 2),
            "padding_share": round(1 - real / work, 3), "work_per_batch": round(work / n_batches),
            "largest_call": largest, "heaviest_batch": heaviest,
            "largest_attention_m": round(attention / 1e6, 2)}


class _Sized:
    def __init__(self, index: int, n_words: int) -> None:
        self.index, self.n_words = index, n_words

    def __len__(self) -> int:
        return self.n_words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1500, 5000, 15023])
    parser.add_argument("--budgets", type=int, nargs="+", default=[0, 1024, 512])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    from spacy_nested_mrc.encoder.hf import resolve_encoder

    tokenizer = AutoTokenizer.from_pretrained(resolve_encoder(args.encoder))
    records = read_records(args.train)
    words = [len(r["tokens"]) for r in records]
    rows = []
    for layout in ("mrc_packed", "locate_label"):
        per_sentence = sequence_lengths(records, tokenizer, layout)
        for size in args.sizes:
            for budget in args.budgets:
                rows.append({"layout": layout, **measure(per_sentence, words, size, budget,
                                                         args.seed)})
    lines = [
        "Encoder input of `spacy train` batches (400 words) of the first N GENIA train "
        f"sentences, {args.encoder}'s tokenizer; `max_pass_tokens` 0: one call a batch.", "",
        "| layout | sentences | max_pass_tokens | calls / batch | padding share | work / batch "
        "| largest call | heaviest batch | largest attention (M) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['layout']} | {r['sentences']} | {r['max_pass_tokens']} | "
                     f"{r['calls_per_batch']} | {r['padding_share']:.1%} | {r['work_per_batch']}"
                     f" | {r['largest_call']} | {r['heaviest_batch']} | "
                     f"{r['largest_attention_m']} |")
    write_table(args.out, rows, lines)


if __name__ == "__main__":
    main()
