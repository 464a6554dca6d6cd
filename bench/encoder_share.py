"""What stands between a pipeline and the encoder's floor: trained pipelines through
``nlp.pipe`` over GENIA dev sentences, beside the floor (the bare encoder over the sentences
sorted by length, in calls of at most ``--floor-pass-tokens`` padded wordpieces), each run
split into the wall time inside the encoder's forward (Hugging Face's ``BertModel.forward``,
timed around every call) and the rest, with the padded wordpieces the encoder was given.
Interleaved rounds, the fastest round of each system reported.

A pipeline's encoder time over the floor's says what its encoder input costs (the packed
MRC's questions: more wordpieces than the sentences have); its rest over the floor's rest
what runs around the encoder (Locate-and-Label's heads, decoding, windows). The wall time
inside the pipe's heads (its PyTorch module's forward) is the part of the rest that is the
model's own arithmetic, so the ceiling column, the floor's time over the pipeline's encoder
and heads plus the floor's own rest (its wordpiece tokenizer), is the most any work on what
remains (Python, decoding, alignment, spaCy's tokenizer) could give.

    python bench/encoder_share.py --dev ../shared/data/genia/dev.jsonl \\
        --pipelines mrc_packed=PATH locate_label=PATH \\
        --out bench/results/speed_amd_bf16_cpu_minilm/encoder_share
"""

import argparse
import time
from typing import Any, Callable, Dict, List

import spacy
import torch
from benchlib.data import read_texts
from benchlib.outputs import write_table
from benchlib.pipelines import add_pipeline_arguments
from benchlib.speed import bare_encoder
from transformers.models.bert import modeling_bert

from spacy_nested_mrc.models.wrapping import torch_module


class Clock:
    """Wall time spent inside the functions it wraps (``timed``), and calls counted by
    ``count`` (a function of the call's arguments), while installed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.counted = 0
        self.calls = 0

    def timed(self, func: Callable, count: Callable[..., int] = lambda *a, **k: 0) -> Callable:
        def timed_func(*args, **kwargs):
            start = time.perf_counter()
            output = func(*args, **kwargs)
            self.seconds += time.perf_counter() - start
            self.counted += count(*args, **kwargs)
            self.calls += 1
            return output

        return timed_func

    def reset(self) -> None:
        self.seconds, self.counted, self.calls = 0.0, 0, 0


def encoder_clock() -> Clock:
    """A clock of every ``BertModel.forward`` call, counting their padded wordpieces."""
    clock = Clock()
    modeling_bert.BertModel.forward = clock.timed(
        modeling_bert.BertModel.forward,
        lambda model, input_ids=None, *args, **kwargs: int(input_ids.numel()))
    return clock


def heads_clock(nlp: Any, pipe: str) -> Clock:
    """A clock of the forward of a pipe's heads (its PyTorch module's own forward)."""
    clock = Clock()
    module = torch_module(nlp.get_pipe(pipe).model.get_ref("heads"))
    module.forward = clock.timed(module.forward)
    return clock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_pipeline_arguments(parser)
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--precision", default="bf16", choices=["fp32", "bf16"],
                        help="the floor's arithmetic (the pipelines run as configured)")
    parser.add_argument("--floor-pass-tokens", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pipe", default="nested_mrc_ner", help="the pipe whose heads are timed")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = read_texts(args.dev, args.sentences)
    clock = encoder_clock()
    blank = spacy.blank("en")
    docs = [blank.make_doc(text) for text in texts]
    floor = bare_encoder(args.encoder, by_length=True, precision=args.precision,
                         pass_tokens=args.floor_pass_tokens)
    runs: Dict[str, Callable[[], Any]] = {"floor": lambda: floor(docs, args.batch_size)}
    heads: Dict[str, Clock] = {}
    for item in args.pipelines:
        name, path = item.split("=", 1)
        nlp = spacy.load(path)
        heads[name] = heads_clock(nlp, args.pipe)
        runs[name] = lambda nlp=nlp: list(nlp.pipe(texts, batch_size=args.batch_size))
    for run in runs.values():  # warm-up
        run()
    rounds: Dict[str, List[Dict[str, float]]] = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, run in runs.items():
            clock.reset()
            if name in heads:
                heads[name].reset()
            start = time.perf_counter()
            run()
            total = time.perf_counter() - start
            rounds[name].append({"total_s": total, "encoder_s": clock.seconds,
                                 "heads_s": heads[name].seconds if name in heads else 0.0,
                                 "wordpieces": clock.counted, "calls": clock.calls})
    best = {name: min(times, key=lambda r: r["total_s"]) for name, times in rounds.items()}
    base = best["floor"]
    lines = [
        f"# Encoder and the rest: {len(texts)} GENIA dev sentences, nlp.pipe batches of "
        f"{args.batch_size}, {args.threads} threads, fastest of {args.repeats} interleaved rounds",
        "",
        "| system | total s | x floor (speed) | encoder s | heads s | rest s | padded "
        "wordpieces (x floor's) | encoder calls | encoder s / floor's | rest s / floor's "
        "total | ceiling (x floor) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = []
    floor_rest = base["total_s"] - base["encoder_s"]
    for name, r in best.items():
        rest = r["total_s"] - r["encoder_s"] - r["heads_s"]
        ceiling = base["total_s"] / (r["encoder_s"] + r["heads_s"] + floor_rest)
        rows.append({"system": name, **r, "rest_s": rest, "ceiling": ceiling,
                     "rounds": rounds[name]})
        lines.append(
            f"| {name} | {r['total_s']:.2f} | {base['total_s'] / r['total_s']:.2f} | "
            f"{r['encoder_s']:.2f} | {r['heads_s']:.2f} | {rest:.2f} | {r['wordpieces']:,} "
            f"({r['wordpieces'] / base['wordpieces']:.2f}) | {r['calls']} | "
            f"{r['encoder_s'] / base['encoder_s']:.2f} | {rest / base['total_s']:.2f} | "
            f"{ceiling:.2f} |")
    lines += ["", "floor: the bare encoder over the sentences sorted by length, in calls of at "
              f"most {args.floor_pass_tokens} padded wordpieces ({args.precision}); its rest is "
              "its wordpiece tokenizer and padding. Encoder s: wall time inside "
              "BertModel.forward; heads s: inside the pipe's heads' forward (PyTorch); rest: "
              "the remainder. Ceiling: the floor's total over the pipeline's encoder and "
              "heads plus the floor's rest, the speed left if the rest cost what the "
              "floor's does."]
    write_table(args.out, rows, lines)


if __name__ == "__main__":
    main()
